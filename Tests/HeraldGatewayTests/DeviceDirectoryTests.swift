import Foundation
import Synchronization
import Testing

@testable import HeraldGateway

/// The welcome waits for the batch holding the connection's presence (docs/gateway.md, "Presence"):
/// the numbering of those batches, without a socket or a database.
@Suite("device directory: presence batches and the connections waiting for them")
struct DeviceDirectoryTests {
    final class Fired: Sendable {
        let names = Mutex<[String]>([])
        func callAsFunction(_ name: String) -> @Sendable () -> Void {
            { [self] in names.withLock { $0.append(name) } }
        }
        var all: [String] { names.withLock { $0.sorted() } }
    }

    @Test(
        "a waiter runs once its batch or a later one is written, at once when written already, never once it stopped waiting"
    )
    func batches() {
        let directory = DeviceDirectory()
        let fired = Fired()
        #expect(directory.takeChanges().batch == 1)
        directory.written(1)
        directory.whenWritten(1, connectionID: 1, fired("written already"))
        #expect(fired.all == ["written already"])

        directory.whenWritten(2, connectionID: 2, fired("second"))
        directory.whenWritten(2, connectionID: 3, fired("closed"))
        directory.whenWritten(3, connectionID: 4, fired("third"))
        directory.stopWaiting(3)
        #expect(directory.waiting == 2)

        // Batch 2's write fails: its changes go back into batch 3, whose write stands for both.
        let (changes, second) = directory.takeChanges()
        #expect(second == 2)
        directory.restore(changes)
        #expect(fired.all == ["written already"])
        let third = directory.takeChanges().batch
        #expect(third == 3)
        directory.written(third)
        #expect(fired.all == ["second", "third", "written already"])
        #expect(directory.waiting == 0)

        // Written is a watermark: an older batch reported late changes nothing.
        directory.written(1)
        directory.whenWritten(3, connectionID: 5, fired("after"))
        #expect(fired.all == ["after", "second", "third", "written already"])
    }
}
