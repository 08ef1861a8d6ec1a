#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import AppHostProtocol

/// What a detached application changes in its test process so that the app's code finds its
/// own world there, as in its app process: Foundation's directory look-ups
/// (`FileManager.urls(for:in:)` for Documents, Library, Caches and Application Support,
/// `NSHomeDirectory()`, `UserDefaults`' directory) answer with its container, through the
/// variables the host sets for an app (`containerEnvironment`), and `Bundle.main`'s Info.plist
/// values (`infoDictionary`, `object(forInfoDictionaryKey:)`, `bundleIdentifier`) are its own.
/// A unit test then never writes the real `~/Documents`, and a force-unwrapped Info.plist value
/// does not crash the test process.
///
/// Both are the process's: the detached application made last that is still alive has them,
/// and when none is left the test process gets its own back. `TMPDIR` is left alone: a
/// `TestHost` in a parallel test makes its private directory there, which must outlive any
/// detached application (`NSTemporaryDirectory()` is a temporary directory already).
enum DetachedWorld {
    private struct Entry {
        var id: ObjectIdentifier
        var container: String
        /// The Info.plist as a property list file's bytes; nil when it cannot be one.
        var infoPlist: Data?
    }

    private struct State: ~Copyable {
        /// The test process's own values, saved when the first application entered.
        var savedEnvironment: [String: String?]?
        var savedInfo: UnsafeMutableRawPointer?
        var live: [Entry] = []
    }

    private static let state = Mutex(State())

    /// The variables of a container, as the host sets them for an app, but `TMPDIR`.
    private static func variables(_ container: String) -> [(String, String)] {
        containerEnvironment(container).compactMap { pair in
            guard let equals = pair.firstIndex(of: "=") else { return nil }
            let name = String(pair[..<equals])
            return name == "TMPDIR" ? nil : (name, String(pair[pair.index(after: equals)...]))
        }
    }

    /// Gives the process's world to the application `id`, with `container` and `infoDictionary`.
    static func enter(_ id: ObjectIdentifier, container: String, infoDictionary: [String: Any]) {
        let plist = try? PropertyListSerialization.data(fromPropertyList: infoDictionary, format: .xml, options: 0)
        state.withLock { state in
            if state.savedEnvironment == nil {
                var saved: [String: String?] = [:]
                for (name, _) in variables(container) { saved[name] = getenv(name).map { String(cString: $0) } }
                state.savedEnvironment = saved
                state.savedInfo = MainBundleInfo.copy()
            }
            state.live.append(Entry(id: id, container: container, infoPlist: plist))
            apply(state.live.last!)
        }
    }

    /// Takes the world back from `id`: to the latest application still alive, else to the test
    /// process.
    static func leave(_ id: ObjectIdentifier) {
        state.withLock { state in
            guard let index = state.live.lastIndex(where: { $0.id == id }) else { return }
            let wasCurrent = index == state.live.count - 1
            state.live.remove(at: index)
            if let latest = state.live.last {
                if wasCurrent { apply(latest) }
                return
            }
            for (name, value) in state.savedEnvironment ?? [:] {
                if let value { setenv(name, value, 1) } else { unsetenv(name) }
            }
            MainBundleInfo.replace(with: state.savedInfo)
            MainBundleInfo.release(state.savedInfo)
            state.savedEnvironment = nil
            state.savedInfo = nil
        }
    }

    private static func apply(_ entry: Entry) {
        for (name, value) in variables(entry.container) { setenv(name, value, 1) }
        if let plist = entry.infoPlist, let info = MainBundleInfo.parse(plist) {
            MainBundleInfo.replace(with: info)
            MainBundleInfo.release(info)
        }
    }
}

/// `Bundle.main`'s Info.plist, through CoreFoundation (exported by Foundation on Linux): the
/// main bundle keeps it as a mutable dictionary that `Bundle` reads on every question, so its
/// contents can be replaced after `Bundle.main` was first used. Does nothing where this
/// Foundation lacks one of the functions.
private enum MainBundleInfo {
    typealias Pointer = UnsafeMutableRawPointer

    private static func function<T>(_ name: String, _: T.Type) -> T? {
        dlsym(nil, name).map { unsafeBitCast($0, to: T.self) }
    }

    /// The main bundle's dictionary itself (not retained).
    private static var dictionary: Pointer? {
        guard let main = function("CFBundleGetMainBundle", (@convention(c) () -> Pointer?).self),
              let info = function("CFBundleGetInfoDictionary", (@convention(c) (Pointer?) -> Pointer?).self)
        else { return nil }
        return info(main())
    }

    /// A retained copy of the main bundle's dictionary.
    static func copy() -> Pointer? {
        guard let dictionary, let copy = function("CFDictionaryCreateMutableCopy", (@convention(c) (Pointer?, Int, Pointer?) -> Pointer?).self)
        else { return nil }
        return copy(nil, 0, dictionary)
    }

    /// A retained dictionary of the property list `data`.
    static func parse(_ data: Data) -> Pointer? {
        guard let create = function("CFDataCreate", (@convention(c) (Pointer?, UnsafePointer<UInt8>?, Int) -> Pointer?).self),
              let parse = function(
                "CFPropertyListCreateWithData",
                (@convention(c) (Pointer?, Pointer?, UInt, UnsafeMutablePointer<Int>?, UnsafeMutablePointer<Pointer?>?) -> Pointer?).self)
        else { return nil }
        let bytes = data.withUnsafeBytes { create(nil, $0.bindMemory(to: UInt8.self).baseAddress, data.count) }
        defer { release(bytes) }
        return parse(nil, bytes, 0, nil, nil)
    }

    /// Empties the main bundle's dictionary and fills it with `source`'s entries.
    static func replace(with source: Pointer?) {
        guard let source, let dictionary,
              let removeAll = function("CFDictionaryRemoveAllValues", (@convention(c) (Pointer?) -> Void).self),
              let apply = function(
                "CFDictionaryApplyFunction",
                (@convention(c) (Pointer?, @convention(c) (UnsafeRawPointer?, UnsafeRawPointer?, Pointer?) -> Void, Pointer?) -> Void).self),
              function("CFDictionarySetValue", (@convention(c) (Pointer?, UnsafeRawPointer?, UnsafeRawPointer?) -> Void).self) != nil
        else { return }
        removeAll(dictionary)
        apply(source, { key, value, destination in
            let set = unsafeBitCast(dlsym(nil, "CFDictionarySetValue")!, to: (@convention(c) (Pointer?, UnsafeRawPointer?, UnsafeRawPointer?) -> Void).self)
            set(destination, key, value)
        }, dictionary)
    }

    static func release(_ object: Pointer?) {
        guard let object, let release = function("CFRelease", (@convention(c) (Pointer?) -> Void).self) else { return }
        release(object)
    }
}
