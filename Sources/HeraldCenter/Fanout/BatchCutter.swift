import Foundation
import HeraldAPNsVocabulary
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
    /// A templated push's: a batch also closes before its targets' renders could pass the budget.
    var renderBudget: RenderBudget?

    /// The bytes a templated batch's rendered payloads may take in all, and how each target's
    /// render is bounded (``JobBatchFactory/renderBudget``).
    struct RenderBudget: Sendable {
        let bytes: Int
        let template: PayloadTemplate
        /// Values each device has before the template's names' (its locale, for variants).
        let firstName: Int
        /// Bytes the `herald` key adds to a render.
        let stamp: Int
        /// APNs' limit: a longer render is sent empty.
        let limit: Int

        /// For each of `targets`: at least as long as its render; at most ``limit``. A page's at
        /// once, so the template is not copied for each device.
        func bounds(_ targets: DeviceTokens) -> [Int] {
            (0..<targets.count).map { index in
                min(limit, stamp + template.maximumRenderedCount { targets.valueLength(firstName + $0, at: index) })
            }
        }
    }

    /// A batch: its record for PostgreSQL and its targets.
    struct Cut: Sendable {
        var record: RecordedBatch
        var targets: DeviceTokens
    }

    /// The batches of `page`, numbered from `firstSequence`.
    func cut(_ page: AudiencePage, firstSequence: Int) -> [Cut] {
        // A page reaches few groups (environment × topic): an open batch per group index, with its
        // count kept beside it (reading an optional batch's count copies the batch out).
        var open = [DeviceTokens?](repeating: nil, count: page.groups.count)
        var counts = [Int](repeating: 0, count: page.groups.count)
        var order: [Int] = []
        var cuts: [Cut] = []
        cuts.reserveCapacity(page.count / batchSize + page.groups.count)
        var sequence = firstSequence
        // A templated push's: the bound of each open batch's renders in all.
        var bytes = [Int](repeating: 0, count: page.groups.count)
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
            counts[group] = 0
            bytes[group] = 0
        }
        let devices = page.devices
        // A templated push's: each device's render at its longest.
        let bounds = renderBudget?.bounds(devices)
        let budget = renderBudget?.bytes ?? 0
        for index in 0..<devices.count {
            let group = Int(page.groupIndexes[index])
            if let bounds {
                if counts[group] > 0, bytes[group] + bounds[index] > budget { close(group) }
                bytes[group] += bounds[index]
            }
            if counts[group] == 0 {
                open[group] = DeviceTokens(reservingCapacity: min(batchSize, devices.count - index))
                if !order.contains(group) { order.append(group) }
            }
            open[group]!.append(index, of: devices)
            counts[group] += 1
            if counts[group] == batchSize { close(group) }
        }
        for group in order { close(group) }
        return cuts
    }
}
