import Foundation
import HeraldCore
import HeraldDomain
import Logging
import PostgresNIO
import Testing

@testable import HeraldStore

/// The audit log holds every change it records, and nobody who runs Herald can rewrite it: a
/// change and its entry are written together or not at all, the table cannot be emptied, and the
/// role the services run as may only read and append it.
@Suite("integrity of the audit log")
struct AuditIntegrityTests {
    static let origin = AuditOrigin(actor: .admin, requestID: "req-audit", sourceAddress: "192.0.2.7")

    @Test("an audited change and its entry are written together, or neither is")
    func changeAndEntryTogether() async throws {
        try await withEmptyDatabase { client, logger in
            try await MigrationRunner(client: client, logger: logger).migrate()
            let apps = AppRepository(client: client, logger: logger)
            let keys = APIKeyRepository(client: client, logger: logger)
            let audit = AuditRepository(client: client, logger: logger)
            let appID = UUID()
            _ = try await apps.create(
                name: "Audited", bundleID: "com.example.audited", id: appID,
                audit: AuditEntry("app.created", appID: appID, origin: Self.origin))
            let key = try #require(
                try await keys.create(
                    appID: appID, kind: .server, key: "hs_audit_\(UUID().uuidString)", liveAtMost: 100,
                    audit: AuditEntry("key.created", appID: appID, origin: Self.origin)))

            // The log refuses this action's entries (as it would a full disk or a lost connection
            // between the two writes): the revocation must not happen without its entry.
            try await client.query(
                """
                CREATE FUNCTION refuse_revocations() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF NEW.action = 'key.revoked' THEN RAISE EXCEPTION 'audit log unavailable'; END IF;
                    RETURN NEW;
                END;
                $$
                """, logger: logger)
            try await client.query(
                """
                CREATE TRIGGER refuse_revocations BEFORE INSERT ON audit_events
                    FOR EACH ROW EXECUTE FUNCTION refuse_revocations()
                """, logger: logger)
            await #expect(throws: PSQLError.self) {
                try await keys.revoke(
                    id: key.id, appID: appID, audit: AuditEntry("key.revoked", appID: appID, origin: Self.origin))
            }
            #expect(try await keys.liveKey(id: key.id) != nil, "revoked without its audit entry")

            // Nothing changed, nothing recorded: a revocation of an unknown key writes no entry.
            #expect(
                try await keys.revoke(
                    id: UUID(), appID: appID,
                    audit: AuditEntry("key.revoked.unknown", appID: appID, origin: Self.origin))
                    == false)
            try await client.query("DROP TRIGGER refuse_revocations ON audit_events", logger: logger)
            #expect(
                try await keys.revoke(
                    id: key.id, appID: appID, audit: AuditEntry("key.revoked", appID: appID, origin: Self.origin)))
            #expect(try await keys.liveKey(id: key.id) == nil)
            let actions = try await audit.events(appID: appID).map(\.action)
            #expect(actions == ["app.created", "key.created", "key.revoked"])
        }
    }

    @Test("the audit log cannot be truncated")
    func noTruncate() async throws {
        try await withEmptyDatabase { client, logger in
            try await MigrationRunner(client: client, logger: logger).migrate()
            let appID = UUID()
            try await AuditRepository(client: client, logger: logger).record(
                AuditEntry("app.updated", appID: appID, origin: Self.origin))
            let error = await #expect(throws: PSQLError.self) {
                try await client.query("TRUNCATE audit_events", logger: logger)
            }
            #expect(error.map { String(reflecting: $0) }?.contains("never truncated") == true)
            #expect(try await AuditRepository(client: client, logger: logger).events(appID: appID).count == 1)
        }
    }

    @Test("the runtime role runs Herald, reads and appends the audit log, and can change nothing else in it")
    func runtimeRole() async throws {
        try await withEmptyDatabaseNamed { owner, logger, database in
            try await MigrationRunner(client: owner, logger: logger).migrate()
            // A login role that is only a member of herald_runtime, as docs/security.md sets up.
            let login = "herald_service_\(UUID().uuidString.prefix(8).lowercased())"
            let password = UUID().uuidString
            try await owner.query(
                PostgresQuery(unsafeSQL: "CREATE ROLE \(login) LOGIN PASSWORD '\(password)' IN ROLE herald_runtime"),
                logger: logger)
            let appID = UUID()
            // One entry past the owner's floor (400 days), one inside it.
            for (action, daysAgo) in [("app.updated", 401), ("key.created", 399)] {
                try await owner.query(
                    """
                    INSERT INTO audit_events (app_id, actor, action, occurred_at)
                    VALUES (\(appID), 'admin', \(action), now() - make_interval(days => \(Int32(daysAgo))))
                    """, logger: logger)
            }

            // The owner's functions are the runtime role's, not everyone's, and look up their
            // tables with temporary objects last.
            let outsider = "herald_outsider_\(UUID().uuidString.prefix(8).lowercased())"
            try await owner.query(PostgresQuery(unsafeSQL: "CREATE ROLE \(outsider) NOLOGIN"), logger: logger)
            for function in ["herald_delete_old_audit_events(interval, integer)", "herald_analyze_devices()"] {
                let rows = try await owner.query(
                    """
                    SELECT has_function_privilege(\(outsider), \(function), 'EXECUTE'),
                           has_function_privilege('herald_runtime', \(function), 'EXECUTE'),
                           array_to_string(proconfig, ',')
                    FROM pg_proc WHERE oid = \(function)::regprocedure
                    """, logger: logger)
                for try await (outsiders, runtime, config) in rows.decode((Bool, Bool, String).self) {
                    #expect(!outsiders, "\(function): executable by any role")
                    #expect(runtime, "\(function): not executable by herald_runtime")
                    #expect(config.hasPrefix("search_path=pg_catalog, ") && config.hasSuffix(", pg_temp"), "\(config)")
                }
            }
            try await owner.query(PostgresQuery(unsafeSQL: "DROP ROLE \(outsider)"), logger: logger)

            var settings = try await HeraldConfiguration.load().postgres
            settings.database = database
            settings.user = login
            settings.password = password
            let dropLogin = PostgresQuery(unsafeSQL: "DROP ROLE IF EXISTS \(login)")
            do {
                try await Self.asRuntime(settings, appID: appID, logger: logger)
            } catch {
                try? await owner.query(dropLogin, logger: logger)
                Issue.record("as the runtime role: \(String(reflecting: error))")
                throw error
            }
            try await owner.query(dropLogin, logger: logger)
        }
    }

    /// What the runtime role may and may not do, as the role.
    static func asRuntime(_ settings: PostgresSettings, appID: UUID, logger: Logger) async throws {
        try await HeraldDatabase.withClient(settings: settings, logger: logger) { runtime in
            // A service's start: the migrations are there already, nothing to create.
            try await MigrationRunner(client: runtime, logger: logger).migrate()
            // Herald's work, with its entries.
            _ = try await AppRepository(client: runtime, logger: logger).create(
                name: "Runtime", bundleID: "com.example.runtime", id: appID,
                audit: AuditEntry("app.created", appID: appID, origin: Self.origin))
            let audit = AuditRepository(client: runtime, logger: logger)
            #expect(
                try await audit.events(appID: appID).map(\.action) == ["app.updated", "key.created", "app.created"])
            try await runtime.query("SELECT herald_analyze_devices()", logger: logger)

            // Nothing in the log can be changed or removed by hand, nor the owner's floor lowered;
            // retention goes through the owner's function, which keeps what the floor keeps.
            for statement in [
                "UPDATE audit_events SET action = 'nothing.happened'",
                "DELETE FROM audit_events",
                "TRUNCATE audit_events",
                "DELETE FROM herald_schema_migrations",
                "UPDATE herald_audit_policy SET kept_at_least = interval '30 days'",
                "DELETE FROM herald_audit_policy",
                "SELECT setval(pg_get_serial_sequence('audit_events', 'id'), 1)",
            ] {
                let error = await #expect(throws: PSQLError.self, "\(statement)") {
                    _ = try await runtime.query(PostgresQuery(unsafeSQL: statement), logger: logger).collect()
                }
                #expect(error?.serverInfo?[.sqlState] == "42501", "\(statement): not a privilege error")
            }
            #expect(try await audit.keptAtLeast() == .seconds(400 * 86_400))
            #expect(try await audit.deleteOlder(than: .seconds(86_400)) == 1)
            #expect(try await audit.events(appID: appID).map(\.action) == ["key.created", "app.created"])
        }
    }
}
