#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import AppHostSystem
import CAppHostShims
import Synchronization

extension StorageVolumes {
    /// The serial queue on which containers' disk images are made, checked, resized and mounted
    /// (mke2fs, e2fsck, resize2fs, a copy, mount(2): hundreds of milliseconds on a loaded
    /// machine), so that the host's loop does not wait for them; and what it mounted. One
    /// owner at a time: an app group's container that two launches both want is prepared by the
    /// first, and the second, queued behind it, finds it mounted. What it made is recorded by
    /// StorageVolumes (`commit`) on the loop; it never touches that record.
    final class ImageQueue: Sendable {
        /// What preparing one owner's container made: what holds it, what to say, and whether a
        /// file system may have been mounted or unmounted on it (a standby made before misses it).
        struct Prepared: Equatable, Sendable {
            var owner: Owner
            var volume: Volume
            var notices: [Notice]
            var mountChanged: Bool
        }

        /// What the queue knows: each container it set up, and whether the host has released its
        /// storage (then it mounts nothing more).
        private struct Known {
            var volumes: [Owner: Volume] = [:]
            var closed = false
        }

        private let layout: Layout
        private let queue = DispatchQueue(label: "apphost.storage")
        /// Touched on the queue only (the mutex says so to the compiler, and is never contended).
        private let known = Mutex(Known())

        init(layout: Layout) {
            self.layout = layout
        }

        /// Prepares each owner's container to its limit, in order, after whatever is queued
        /// before; `then` runs on the queue with what was made. Disk images only: a project
        /// quota is set on the loop (its project table is StorageVolumes').
        func prepare(_ owners: [(owner: Owner, limit: UInt64)], then: @escaping @Sendable ([Prepared]) -> Void) {
            precondition(layout.mechanism == .diskImage, "only disk images are prepared off the loop")
            queue.async { [self] in
                then(owners.map { prepareHere($0.owner, limit: $0.limit) })
            }
        }

        /// Prepares one owner's container, waiting for it (and for what is queued before it):
        /// the loop's own path, for a purge and for `prepare(for:)`.
        func prepareNow(_ owner: Owner, limit: UInt64) -> Prepared {
            queue.sync { prepareHere(owner, limit: limit) }
        }

        /// On the queue: a container this queue mounted and still mounted as it was needs
        /// nothing (and changes no mount); else its image is adopted or made and mounted.
        private func prepareHere(_ owner: Owner, limit: UInt64) -> Prepared {
            dispatchPrecondition(condition: .onQueue(queue))
            let (volume, closed) = known.withLock { ($0.volumes[owner], $0.closed) }
            if let volume, case .mounted(let device) = volume.holding, layout.currentDevice(owner) == device {
                return Prepared(owner: owner, volume: volume, notices: [], mountChanged: false)
            }
            if closed {
                let reason = "the host released its storage"
                return Prepared(
                    owner: owner, volume: Volume(holding: .unlimited(reason), limit: nil),
                    notices: [Notice(warning: true, text: "\(owner) is not limited: \(reason)")], mountChanged: false)
            }
            let (made, notices) = layout.prepareImage(owner, limit: limit)
            known.withLock { $0.volumes[owner] = made }
            return Prepared(owner: owner, volume: made, notices: notices, mountChanged: true)
        }

        /// Once the work queued is done, unmounts every container's file system it mounted, and
        /// mounts none after; says what could not be.
        func unmountAll() -> [String] {
            queue.sync {
                let volumes = known.withLock { known in
                    known.closed = true
                    defer { known.volumes = [:] }
                    return known.volumes
                }
                var lines: [String] = []
                for (owner, volume) in volumes {
                    guard case .mounted(let device) = volume.holding, layout.currentDevice(owner) == device else { continue }
                    let path = layout.containerPath(owner)
                    // A mount namespace made while it was mounted (an app's) may hold it a while yet:
                    // the image is written out whole now, not when the last of those ends.
                    _ = apphost_flush_file_system(path)
                    do {
                        try valueOrErrno("unmount \(path)") { apphost_unmount(path, 0) }
                    } catch {
                        _ = apphost_unmount(path, 1)
                        lines.append("\(owner) was still in use at shutdown (\(error)): detached, it is unmounted once nothing uses it")
                    }
                }
                return lines
            }
        }
    }
}
