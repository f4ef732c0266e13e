import Foundation
import HeraldDomain
import HeraldRecords
import HeraldStore

/// Cuts one page of an audience into job batches: devices of one environment and topic go
/// together, at most `batchSize` to a batch, in device-id order; a page's partial batches are
/// closed at its end, so every batch lies within one page and a resumed fan-out (which restarts
/// at the page boundary) cuts exactly the same batches with the same sequence numbers.
struct BatchCutter: Sendable {
    let pushID: UUID
    let batchSize: Int

    /// A batch: its record for PostgreSQL and its targets.
    struct Cut: Sendable {
        var record: RecordedBatch
        var targets: DeviceTokens
    }

    /// The batches of `page`, numbered from `firstSequence`.
    func cut(_ page: AudiencePage, firstSequence: Int) -> [Cut] {
        // A page reaches few groups (environment × topic): an open batch per group index.
        var open = [DeviceTokens?](repeating: nil, count: page.groups.count)
        var order: [Int] = []
        var cuts: [Cut] = []
        cuts.reserveCapacity(page.count / batchSize + page.groups.count)
        var sequence = firstSequence
        func close(_ group: Int) {
            guard let targets = open[group], let first = targets.deviceIDs.first, let last = targets.deviceIDs.last
            else { return }
            let key = page.groups[group]
            cuts.append(
                Cut(
                    record: RecordedBatch(
                        pushID: pushID, sequence: sequence, firstDevice: first, lastDevice: last,
                        targetCount: targets.count, environment: key.environment, topic: key.topic),
                    targets: targets))
            sequence += 1
            open[group] = nil
        }
        let devices = page.devices
        for index in 0..<devices.count {
            let group = Int(page.groupIndexes[index])
            if open[group] == nil {
                open[group] = DeviceTokens(reservingCapacity: min(batchSize, devices.count - index))
                if !order.contains(group) { order.append(group) }
            }
            open[group]!.append(index, of: devices)
            if open[group]!.count == batchSize { close(group) }
        }
        for group in order { close(group) }
        return cuts
    }
}
