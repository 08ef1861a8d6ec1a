public import Foundation

extension DoctorReport {
    /// Adds what the state directory's machine offers for storage limits: project quotas on its
    /// file system, loop devices and mkfs.ext4 for a disk image per container.
    public mutating func probeStorage(stateDirectory: URL) {
        // Never throws without a requested mechanism.
        guard let probe = try? StorageProbe.probe(stateDirectory: stateDirectory, requested: nil) else { return }
        add("project quotas", probe.projectQuotas.available, probe.projectQuotas.detail)
        add("disk images", probe.diskImages.available, probe.diskImages.detail)
        storageMechanism = probe.mechanism
        storageNote = probe.note
    }

    /// How `apphost launch` would hold containers to their storage limits here.
    public var storage: String {
        guard let storageMechanism, let storageNote else { return "storage: not probed" }
        return "storage: \(storageMechanism.rawValue), \(storageNote)"
    }
}
