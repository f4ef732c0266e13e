import Foundation
import HeraldStore

/// Cuts one page of audience rows into job batches: devices of one environment and topic go
/// together, at most `batchSize` to a batch, in device-id order; a page's partial batches are
/// closed at its end, so every batch lies within one page and a resumed fan-out (which restarts
/// at the page boundary) cuts exactly the same batches with the same sequence numbers.
struct BatchCutter {
    let pushID: UUID
    let batchSize: Int

    /// A batch: its record for PostgreSQL and its targets.
    struct Cut {
        var record: RecordedBatch
        var targets: [AudienceTarget]
    }

    /// The batches of `page`, numbered from `firstSequence`.
    func cut(_ page: [AudienceTarget], firstSequence: Int) -> [Cut] {
        var open: [GroupKey: [AudienceTarget]] = [:]
        var order: [GroupKey] = []
        var cuts: [Cut] = []
        var sequence = firstSequence
        func close(_ key: GroupKey) {
            guard let targets = open[key], let first = targets.first, let last = targets.last else { return }
            cuts.append(Cut(record: RecordedBatch(pushID: pushID, sequence: sequence, firstDevice: first.deviceID,
                                                  lastDevice: last.deviceID, targetCount: targets.count,
                                                  environment: key.environment, topic: key.topic),
                            targets: targets))
            sequence += 1
            open[key] = nil
        }
        for target in page {
            let key = GroupKey(environment: target.environment, topic: target.topic)
            if open[key] == nil {
                open[key] = []
                open[key]!.reserveCapacity(min(batchSize, page.count))
                if !order.contains(key) { order.append(key) }
            }
            open[key]!.append(target)
            if open[key]!.count == batchSize { close(key) }
        }
        for key in order { close(key) }
        return cuts
    }

    struct GroupKey: Hashable {
        var environment: APNsEnvironment
        var topic: String
    }
}
