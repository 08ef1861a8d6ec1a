/// Storage pressure, as iOS meets it: when the disk runs short, the system deletes the caches
/// and temporary files of apps, never their documents, and ends an app whose caches it is
/// reclaiming (0xbaddd15c). `storage-pressure` does it on demand. Pure: what happens to one app
/// is decided from its state; the host purges and ends.
enum StoragePressure {
    /// What is purged, relative to the container; their contents go, the directories stay.
    static let purgedDirectories = ["Library/Caches", "tmp"]

    enum Decision: Equatable {
        /// Not running: its caches are purged now.
        case purge
        /// Suspended: ended now without a callback, purged once its process is gone.
        case end(Termination)
        /// Already being ended (for another reason): purged once its process is gone.
        case purgeWhenGone
        /// Running: nothing of it is touched (it may be using its caches); the reason says where.
        case leave(String)
    }

    /// The decision for an app in `state`; `isEnding` when the host already decided to end it,
    /// `inForeground` when it is launching to the foreground.
    static func decision(state: AppState, isEnding: Bool, inForeground: Bool) -> Decision {
        if isEnding { return .purgeWhenGone }
        switch state {
        case .notRunning, .terminated:
            return .purge
        case .suspended:
            return .end(termination)
        case .launching:
            return .leave(inForeground ? "launching in the foreground" : "launching in the background")
        case .inactive, .active:
            return .leave("running in the foreground")
        case .background:
            return .leave("running in the background")
        }
    }

    /// The end of a suspended app whose caches are reclaimed.
    static let termination = Termination(
        kind: .storagePressure, namespace: .runningBoard, code: TerminationCode.cachesReclaimed.rawValue,
        reason: "ended while suspended to reclaim its caches under storage pressure: "
            + "\(purgedDirectories.joined(separator: " and ")) are purged once it is gone")

    /// One line of what a purge freed: "purged Library/Caches and tmp: freed 1048576 bytes (1.0 MiB) in 3 files";
    /// with no file in them, "nothing to free" (what their own directories' blocks held is not the app's data).
    static func purged(bytes: UInt64, files: Int, problem: String?) -> String {
        let what = files == 0 ? "nothing to free (they held no file)" : "freed \(bytes) bytes (\(bytes.mebibytes)) in \(files) file\(files == 1 ? "" : "s")"
        return "purged \(purgedDirectories.joined(separator: " and ")): \(what)" + (problem.map { "; \($0)" } ?? "")
    }
}
