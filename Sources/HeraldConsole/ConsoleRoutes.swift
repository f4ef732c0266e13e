import Foundation
import HTTPTypes
import HeraldAPIContract
import HeraldCore
import HeraldStore
import Hummingbird
import Logging
import NIOCore
import OpenAPIRuntime

/// A request context the console can serve: it knows the caller's address (failed sign-ins
/// count against it, and the audit log records it).
public protocol ConsoleRequestContext: RequestContext {
    /// The address the request came from (a load balancer's, behind one).
    var sourceAddress: String { get }
}

/// The operations console under `/console`: server-rendered pages over the Open API's
/// operations (``ConsoleGateway``), for operations staff who run campaigns from a browser.
///
/// Sessions live in PostgreSQL (``ConsoleSessionRepository``): the browser holds an `HttpOnly`,
/// `SameSite=Strict` cookie; every form carries the session's CSRF token; every page is sent with
/// a Content-Security-Policy that allows the console's own style sheet and script only.
public struct ConsoleRoutes<Context: ConsoleRequestContext>: Sendable {
    let gateway: any ConsoleGateway
    let sessions: ConsoleSessionRepository
    let idleTimeout: Duration
    let sessionLifetime: Duration
    let cookies: ConsoleCookies
    let logger: Logger

    /// The largest form the console reads from a signed-in browser (the compose form with its
    /// custom data, a credential file); forms are read after the session is checked.
    static var maximumFormBytes: Int { 256 * 1024 }
    /// The largest sign-in form.
    static var maximumSignInBytes: Int { 4096 }

    /// - Parameters:
    ///   - idleTimeout: a session unused this long ends.
    ///   - sessionLifetime: any session ends this long after sign-in.
    ///   - secureCookies: whether cookies carry `Secure` (off only for plain-HTTP development).
    public init(
        gateway: any ConsoleGateway, sessions: ConsoleSessionRepository, idleTimeout: Duration,
        sessionLifetime: Duration, secureCookies: Bool, logger: Logger
    ) {
        self.gateway = gateway
        self.sessions = sessions
        self.idleTimeout = idleTimeout
        self.sessionLifetime = sessionLifetime
        self.cookies = ConsoleCookies(secure: secureCookies)
        self.logger = logger
    }

    /// Unknown session cookies and the sources sending them, looked up no more than needed.
    let lookups = SessionLookupGuard()

    /// Adds the console's routes to `router`, under `/console`, behind ``ConsoleHeadersMiddleware``.
    public func register(on router: Router<Context>) {
        let console = router.group("console").add(middleware: ConsoleHeadersMiddleware<Context>())
        console.get { _, _ in Self.redirect("/console/pushes") }
        console.get("assets/console.css") { _, _ in Self.asset(ConsoleStyle.css, type: "text/css; charset=utf-8") }
        console.get("assets/console.js") { _, _ in
            Self.asset(ConsoleScript.javaScript, type: "text/javascript; charset=utf-8")
        }
        console.get("sign-in") { request, _ in self.signInPage(request) }
        console.post("sign-in") { request, context in try await self.signIn(request, context: context) }
        console.post("sign-out") { request, context in try await self.signOut(request, context: context) }
        console.get("pushes") { request, context in try await self.pushesPage(request, context: context) }
        console.get("pushes/:id") { request, context in try await self.pushPage(request, context: context) }
        console.get("pushes/:id/events") { request, context in try await self.pushEvents(request, context: context) }
        console.get("pushes/:id/report.csv") { request, context in try await self.pushReport(request, context: context)
        }
        console.post("pushes/:id/:action") { request, context in
            try await self.pushAction(request, context: context)
        }
        console.get("compose") { request, context in try await self.composePage(request, context: context) }
        console.post("compose") { request, context in try await self.compose(request, context: context) }
        console.post("compose/check") { request, context in try await self.composeCheck(request, context: context) }
        console.get("schedules") { request, context in try await self.schedulesPage(request, context: context) }
        console.get("schedules/:id") { request, context in try await self.schedulePage(request, context: context) }
        console.post("schedules/:id/:action") { request, context in
            try await self.scheduleAction(request, context: context)
        }
        console.get("devices") { request, context in try await self.devicesPage(request, context: context) }
        console.get("stats") { request, context in try await self.statsPage(request, context: context) }
        console.get("apps") { request, context in try await self.appsPage(request, context: context) }
        console.post("apps") { request, context in try await self.createApp(request, context: context) }
        console.get("apps/:appId") { request, context in try await self.appPage(request, context: context) }
        console.post("apps/:appId/keys") { request, context in try await self.createKey(request, context: context) }
        console.post("apps/:appId/keys/:keyId/:action") { request, context in
            try await self.keyAction(request, context: context)
        }
        console.post("apps/:appId/credentials") { request, context in
            try await self.putCredential(request, context: context)
        }
    }
}

// MARK: Sessions

extension ConsoleRoutes {
    /// A signed-in request: who, the session's CSRF token, and where from.
    struct SignedIn {
        var identity: ConsoleIdentity
        var csrf: String
        var origin: ConsoleRequestOrigin

        func chrome(_ title: String, section: Chrome.Section? = nil) -> Chrome {
            Chrome(title: title, identity: identity, csrf: csrf, section: section)
        }
    }

    /// The session the request's cookie names, if it is live and its owner still may sign in.
    func signedIn(_ request: Request, context: Context) async throws -> SignedIn? {
        guard let token = ConsoleCookies.value(ConsoleCookies.session, in: request.headers) else { return nil }
        let cookie = Data(SecretHasher.hash(token)).base64EncodedString()
        guard lookups.mayLookUp(cookie, from: context.sourceAddress) else { return nil }
        let session: ConsoleSessionRepository.Session?
        do {
            session = try await sessions.resume(token: token, idle: idleTimeout, lifetime: sessionLifetime)
        } catch {
            throw ConsoleError(
                .serviceUnavailable, code: .databaseUnavailable,
                message: "Herald cannot reach its database right now. Retry in a few seconds.")
        }
        guard let session else {
            lookups.failed(cookie, from: context.sourceAddress)
            return nil
        }
        lookups.succeeded(cookie)
        guard let identity = try await gateway.identity(of: session.owner) else { return nil }
        let origin = ConsoleRequestOrigin(
            requestID: RequestID.acceptable(request.headers[.requestID]) ?? UUID().uuidString.lowercased(),
            sourceAddress: context.sourceAddress)
        return SignedIn(identity: identity, csrf: session.csrfToken, origin: origin)
    }

    /// Where a page sends a browser without a live session.
    static var signInAgain: Response { redirect("/console/sign-in?expired=1") }

    func signInPage(_ request: Request, error: String? = nil, status: HTTPResponse.Status = .ok) -> Response {
        let csrf = RandomSecret.text()
        let query = request.uri.queryParameters
        let notice =
            query.has("signed_out") ? "You signed out." : query.has("expired") ? "Please sign in to continue." : nil
        var response = Self.html(
            ConsoleTemplates.render(
                "signIn", SignInPage(csrf: csrf, error: error, notice: error == nil ? notice : nil)),
            status: status)
        response.headers.append(HTTPField(name: .setCookie, value: cookies.setCookie(ConsoleCookies.signInCSRF, csrf)))
        return response
    }

    func signIn(_ request: Request, context: Context) async throws -> Response {
        // Before anyone is signed in, a few KiB at most are read (as the API reads before a key).
        let form = try await Self.form(request, upTo: Self.maximumSignInBytes)
        guard let expected = ConsoleCookies.value(ConsoleCookies.signInCSRF, in: request.headers),
            ConsoleCookies.csrfMatches(form["csrf"], expected)
        else {
            return signInPage(
                request, error: "The sign-in form had expired or was not sent from this page. Please try again.",
                status: .forbidden)
        }
        let secret = (form["key"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        guard !secret.isEmpty else {
            return signInPage(
                request, error: "Enter a server key of your app, or the admin token.", status: .badRequest)
        }
        let identity: ConsoleIdentity
        do {
            identity = try await gateway.signIn(secret: secret, source: context.sourceAddress)
        } catch {
            return signInPage(request, error: error.message, status: error.status)
        }
        let token = RandomSecret.text()
        do {
            try await sessions.deleteExpired(idle: idleTimeout, lifetime: sessionLifetime)
            try await sessions.open(token: token, owner: identity.owner, csrfToken: RandomSecret.text())
        } catch {
            return signInPage(
                request, error: "Herald cannot reach its database right now. Retry in a few seconds.",
                status: .serviceUnavailable)
        }
        logger.info(
            "console sign-in",
            metadata: [
                "key": "\(identity.key?.id.uuidString.lowercased() ?? "admin")", "source": "\(context.sourceAddress)",
            ])
        var response = Self.redirect(identity.sendsPushes ? "/console/pushes" : "/console/apps")
        response.headers.append(HTTPField(name: .setCookie, value: cookies.setCookie(ConsoleCookies.session, token)))
        response.headers.append(HTTPField(name: .setCookie, value: cookies.setCookie(ConsoleCookies.signInCSRF, nil)))
        return response
    }

    func signOut(_ request: Request, context: Context) async throws -> Response {
        guard let signedIn = try await signedIn(request, context: context) else {
            return Self.redirect("/console/sign-in")
        }
        let form = try await Self.form(request)
        guard ConsoleCookies.csrfMatches(form["csrf"], signedIn.csrf) else { return Self.csrfRefusal(signedIn) }
        if let token = ConsoleCookies.value(ConsoleCookies.session, in: request.headers) {
            try await sessions.close(token: token)
        }
        var response = Self.redirect("/console/sign-in?signed_out=1")
        response.headers.append(HTTPField(name: .setCookie, value: cookies.setCookie(ConsoleCookies.session, nil)))
        return response
    }

    /// `text` for a URL's query.
    static func queryValue(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
    }

    static func csrfRefusal(_ signedIn: SignedIn) -> Response {
        message(
            signedIn, status: .forbidden, heading: "This form was not accepted",
            text:
                "It did not carry this session's security token (it was sent from another page, or before you signed in again). Nothing was changed. Go back, reload the page and try again.",
            link: .init(href: "/console/pushes", label: "Back to pushes"))
    }
}

// MARK: Responses

extension ConsoleRoutes {
    static func html(_ body: String, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status, headers: [.contentType: "text/html; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(string: body)))
    }

    static func redirect(_ location: String) -> Response {
        Response(status: .seeOther, headers: [.location: location])
    }

    static func asset(_ text: String, type: String) -> Response {
        Response(
            status: .ok, headers: [.contentType: type, .cacheControl: "public, max-age=300"],
            body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    static func json(_ object: [String: Any], status: HTTPResponse.Status = .ok) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return Response(
            status: status, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func message(
        _ signedIn: SignedIn, status: HTTPResponse.Status, heading: String, text: String, link: MessagePage.Link? = nil
    ) -> Response {
        html(
            ConsoleTemplates.render(
                "message", MessagePage(chrome: signedIn.chrome(heading), heading: heading, text: text, link: link)),
            status: status)
    }

    /// The page for an operation's refusal.
    static func refusal(_ signedIn: SignedIn, _ error: ConsoleError) -> Response {
        message(
            signedIn, status: error.status, heading: error.status == .notFound ? "Not found" : "Not done",
            text: error.message, link: .init(href: "/console/pushes", label: "Back to pushes"))
    }

    /// The fields of a form post (`application/x-www-form-urlencoded`), last value of each name.
    static func form(_ request: Request, upTo limit: Int = maximumFormBytes) async throws -> [String: String] {
        var request = request
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: limit)
        } catch {
            throw HTTPError(.contentTooLarge, message: "A console form is at most \(limit / 1024) KiB.")
        }
        return FormFields.parse(String(buffer: buffer))
    }
}

extension HTTPField.Name {
    static let requestID = HTTPField.Name("X-Request-Id")!
}

/// The headers every console answer carries: a strict Content-Security-Policy (the console's own
/// script and style sheet, nothing inline, nothing from elsewhere, no framing), no sniffing, no
/// referrer outside the console, and pages not cached.
struct ConsoleHeadersMiddleware<Context: RequestContext>: RouterMiddleware {
    static var contentSecurityPolicy: String {
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
            + "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        var response = try await next(request, context)
        response.headers[.contentSecurityPolicy] = Self.contentSecurityPolicy
        response.headers[.xContentTypeOptions] = "nosniff"
        response.headers[.xFrameOptions] = "DENY"
        response.headers[.referrerPolicy] = "same-origin"
        if response.headers[.cacheControl] == nil { response.headers[.cacheControl] = "no-store" }
        return response
    }
}

extension HTTPField.Name {
    static let xFrameOptions = HTTPField.Name("X-Frame-Options")!
    static let referrerPolicy = HTTPField.Name("Referrer-Policy")!
}
