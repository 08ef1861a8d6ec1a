import AppHostRuntime
import Dispatch
import Foundation

/// What storage limits cost a launch, where the host makes a disk image per container: the first
/// launch of an app in a host makes its image (mkfs.ext4) if it has none and mounts it; later
/// launches find it mounted (one stat). Each against the same launches with accounting only, in
/// the same run, interleaved. Nil where disk images are not available here.
func benchmarkStorage(executable: String, bundle: AppBundle, runs: Int)
    -> (make: Sample, mount: Sample, first: Sample, firstBaseline: Sample, later: Sample, laterBaseline: Sample)?
{
    let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("apphost-benchmark-storage-\(getpid())")
    defer { try? FileManager.default.removeItem(at: scratch) }
    var makes: [Double] = [], mounts: [Double] = []
    var firsts: [StorageMechanism: [Double]] = [:], laters: [StorageMechanism: [Double]] = [:]
    for run in 0...runs {  // the first is a warm-up
        for mechanism in [StorageMechanism.diskImage, .accounting] {
            var configuration = Supervisor.Configuration(
                stateDirectory: scratch.appendingPathComponent("\(mechanism.rawValue)-\(run)"), executable: executable)
            configuration.forwardAppOutput = false
            configuration.storageMechanism = mechanism
            let log = EventLog()
            guard let supervisor = try? Supervisor(configuration: configuration, observer: { log.record($0) }) else { return nil }
            try! supervisor.install(bundle)
            var cursor = 0
            for launch in 0..<2 {
                let start = now()
                try! supervisor.launch(bundle.name, kind: .foreground)
                let active = log.next("didBecomeActive", after: &cursor)
                let milliseconds = Double(active.at - start) / 1e6
                if run > 0 && launch == 0 { firsts[mechanism, default: []].append(milliseconds) }
                if run > 0 && launch == 1 { laters[mechanism, default: []].append(milliseconds) }
                try! supervisor.terminate(bundle.name)
                _ = log.next("terminated", after: &cursor)
            }
            if mechanism == .diskImage, run > 0 {
                var index = 0
                let made = log.next("storage", after: &index).event
                let mounted = log.next("storage", after: &index).event
                makes.append(made.elapsed!.seconds * 1000)
                mounts.append(mounted.elapsed!.seconds * 1000)
            }
            let done = DispatchSemaphore(value: 0)
            Task {
                await supervisor.shutdown()
                done.signal()
            }
            done.wait()
        }
    }
    return (
        Sample(label: "container image made (mkfs.ext4, 2048 MiB sparse)", values: makes),
        Sample(label: "container image mounted (loop device, ext4)", values: mounts),
        Sample(label: "first launch, image made and mounted", values: firsts[.diskImage] ?? []),
        Sample(label: "first launch, accounting only", values: firsts[.accounting] ?? []),
        Sample(label: "later launch, image already mounted", values: laters[.diskImage] ?? []),
        Sample(label: "later launch, accounting only", values: laters[.accounting] ?? []))
}
