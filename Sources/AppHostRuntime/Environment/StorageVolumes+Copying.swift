#if canImport(Glibc)
import Glibc
#endif
import Foundation
import AppHostSystem
import CAppHostShims

extension StorageVolumes.Layout {
    /// Copies the tree at `from` into `into` (a fresh file system: its lost+found goes first),
    /// and flushes it.
    func copyTree(from: String, into: String, path: String) throws(SystemError) {
        let source = try DirectoryHandle(path: from)
        let destination = try DirectoryHandle(path: into)
        let destinationFD = destination.fd
        _ = unlinkat(destinationFD, "lost+found", AT_REMOVEDIR)
        var skipped: [String] = []
        try ContainerTree.merge(from: source, into: destination, path: path, skipped: &skipped)
        try valueOrErrno("syncfs") { apphost_syncfs(destinationFD) }
    }
}

extension StorageVolumes {
    /// mkdir, mode 0700, unless it exists.
    static func makeDirectory(_ path: String) throws(SystemError) {
        do {
            try valueOrErrno("mkdir \(path)") { mkdir(path, 0o700) }
        } catch where error.errno == EEXIST {}
    }

    /// Copies what the image mounted at `mountPath` holds into the plain container, and flushes it.
    func moveOut(of mountPath: String, owner: Owner) throws(SystemError) {
        let imageRoot = try DirectoryHandle(path: mountPath)
        let containers = try DirectoryHandle(path: stateDirectory.appendingPathComponent(owner.directory).path)
        let plain = try containerDirectory(owner, in: containers)
        var skipped: [String] = []
        try ContainerTree.merge(from: imageRoot, into: plain, path: containerPath(owner), skipped: &skipped)
        let plainFD = plain.fd
        try valueOrErrno("syncfs") { apphost_syncfs(plainFD) }
    }
}
