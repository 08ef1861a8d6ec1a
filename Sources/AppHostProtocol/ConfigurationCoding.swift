import Foundation

// A configuration (WireConfiguration) in a binary layout, the body of a `configure` message
// after its tag. It is decoded twice in every launch, on its critical path: by the runner, and
// by the plugin's copy of the SDK, for which each type's first trip through Foundation's JSON
// coder is slow (its containers' metadata made, its conformances looked up across every loaded
// image: 0.5 ms in the runner and 0.6 ms in a fresh plugin, measured). Read field by field, in
// declaration order, by hand: nothing generic is instantiated.
//
//   integers   little-endian: UInt32 and Int32 in 4 bytes, UInt64, Int (as Int64) and Double
//              (its bits) in 8
//   Bool       1 byte, 0 or 1
//   String     its UTF-8 length (4 bytes), then its bytes; Data the same
//   Optional   1 byte, 0 (absent) or 1 (present, then the value)
//   Array      its count (4 bytes), then each element; a dictionary is an array of key, value
//              pairs in key order
//   enum       its raw value, as a String
//
// It is read as strictly as JSON: a truncated value, a flag other than 0 or 1, a count larger
// than what remains, an unknown enum value or bytes left over are errors.

/// Appends values to a compact configuration.
struct CompactWriter {
    private(set) var bytes: [UInt8] = []

    mutating func write(_ value: UInt64) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func write(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func write(_ value: Int) { write(UInt64(bitPattern: Int64(value))) }
    mutating func write(_ value: Double) { write(value.bitPattern) }
    mutating func write(_ value: Bool) { bytes.append(value ? 1 : 0) }
    mutating func write(_ value: String) { write(Array(value.utf8)) }
    mutating func write(_ value: Data) { write(Array(value)) }

    private mutating func write(_ value: [UInt8]) {
        write(UInt32(value.count))
        bytes.append(contentsOf: value)
    }

    mutating func write<Value>(_ value: Value?, _ body: (inout CompactWriter, Value) -> Void) {
        write(value != nil)
        if let value { body(&self, value) }
    }

    mutating func write<Element>(_ values: [Element], _ body: (inout CompactWriter, Element) -> Void) {
        write(UInt32(values.count))
        for value in values { body(&self, value) }
    }

    mutating func write(_ values: [String]) { write(values) { $0.write($1) } }
}

/// Reads values from a compact configuration, in the order they were written.
struct CompactReader {
    private let bytes: [UInt8]
    private var offset: Int

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = Array(bytes)
        offset = 0
    }

    /// Throws if anything is left unread.
    func finish() throws(CompactCodingError) {
        guard offset == bytes.count else { throw CompactCodingError(description: "a compact configuration with \(bytes.count - offset) bytes too many") }
    }

    private mutating func take(_ count: Int, _ what: String) throws(CompactCodingError) -> ArraySlice<UInt8> {
        guard count >= 0, count <= bytes.count - offset else { throw CompactCodingError(description: "a compact configuration cut short in \(what)") }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    mutating func uint64(_ what: String) throws(CompactCodingError) -> UInt64 {
        try take(8, what).reversed().reduce(0) { $0 << 8 | UInt64($1) }
    }

    mutating func uint32(_ what: String) throws(CompactCodingError) -> UInt32 {
        try take(4, what).reversed().reduce(0) { $0 << 8 | UInt32($1) }
    }

    mutating func int(_ what: String) throws(CompactCodingError) -> Int { Int(Int64(bitPattern: try uint64(what))) }
    mutating func double(_ what: String) throws(CompactCodingError) -> Double { Double(bitPattern: try uint64(what)) }

    mutating func bool(_ what: String) throws(CompactCodingError) -> Bool {
        switch try take(1, what).first {
        case 0: return false
        case 1: return true
        case let byte: throw CompactCodingError(description: "a compact configuration whose \(what) is \(byte ?? 0), not 0 or 1")
        }
    }

    mutating func string(_ what: String) throws(CompactCodingError) -> String {
        String(decoding: try take(Int(try uint32(what)), what), as: UTF8.self)
    }

    mutating func data(_ what: String) throws(CompactCodingError) -> Data { Data(try take(Int(try uint32(what)), what)) }

    mutating func optional<Value>(_ what: String, _ body: (inout CompactReader) throws(CompactCodingError) -> Value) throws(CompactCodingError) -> Value? {
        try bool(what) ? try body(&self) : nil
    }

    mutating func array<Element>(_ what: String, _ body: (inout CompactReader) throws(CompactCodingError) -> Element) throws(CompactCodingError) -> [Element] {
        let count = Int(try uint32(what))
        // Every element takes a byte at least: a larger count is not a configuration.
        guard count <= bytes.count - offset else { throw CompactCodingError(description: "a compact configuration whose \(what) counts \(count) elements") }
        var elements: [Element] = []
        elements.reserveCapacity(count)
        for _ in 0..<count { elements.append(try body(&self)) }
        return elements
    }

    mutating func strings(_ what: String) throws(CompactCodingError) -> [String] { try array(what) { reader throws(CompactCodingError) in try reader.string(what) } }

    mutating func value<Value: RawRepresentable<String>>(_ type: Value.Type, _ what: String) throws(CompactCodingError) -> Value {
        let raw = try string(what)
        guard let value = Value(rawValue: raw) else { throw CompactCodingError(description: "a compact configuration whose \(what) is \(raw)") }
        return value
    }
}

extension WireConfiguration {
    /// The configuration in the compact layout.
    package var compactBytes: [UInt8] {
        var writer = CompactWriter()
        writer.write(protocolVersion)
        for text in [bundleIdentifier, bundleName, bundlePath, pluginPath, delegateClassName, containerPath, launchReason] { writer.write(text) }
        writer.write(capabilities) { $0.write($1) }
        writer.write(openFileLimit) { $0.write($1) }
        writer.write(launchPayload) { $0.write($1) }
        writer.write(backgroundTasks) { $1.write(to: &$0) }
        writer.write(sandbox) { $1.write(to: &$0) }
        writer.write(logLevel) { $0.write($1) }
        writer.write(locationAuthorization) { $0.write($1) }
        writer.write(scenes) { $1.write(to: &$0) }
        writer.write(sceneSessions) { writer, sessions in writer.write(sessions) { $1.write(to: &$0) } }
        writer.write(transfers) { writer, transfers in writer.write(transfers) { $1.write(to: &$0) } }
        // Each in the callback's own compact layout (CompactCoding.swift), which has room for all of it.
        writer.write(launchCallbacks.map { $0.compactMap(CompactCoding.encode).map { Data($0) } }) { $0.write($1) { $0.write($1) } }
        writer.write(deliveredNotifications) { writer, delivered in writer.write(delivered) { $1.write(to: &$0) } }
        return writer.bytes
    }

    /// A configuration from its compact layout.
    package init(compact bytes: ArraySlice<UInt8>) throws(CompactCodingError) {
        var reader = CompactReader(bytes)
        self.init(
            protocolVersion: try reader.int("protocolVersion"), bundleIdentifier: try reader.string("bundleIdentifier"),
            bundleName: try reader.string("bundleName"), bundlePath: try reader.string("bundlePath"),
            pluginPath: try reader.string("pluginPath"), delegateClassName: try reader.string("delegateClassName"),
            containerPath: try reader.string("containerPath"), launchReason: try reader.string("launchReason"))
        capabilities = try reader.optional("capabilities") { reader throws(CompactCodingError) in try reader.strings("capabilities") }
        openFileLimit = try reader.optional("openFileLimit") { reader throws(CompactCodingError) in try reader.uint64("openFileLimit") }
        launchPayload = try reader.optional("launchPayload") { reader throws(CompactCodingError) in try reader.string("launchPayload") }
        backgroundTasks = try reader.optional("backgroundTasks") { reader throws(CompactCodingError) in try WireBackgroundTasks(from: &reader) }
        sandbox = try reader.optional("sandbox") { reader throws(CompactCodingError) in try WireSandbox(from: &reader) }
        logLevel = try reader.optional("logLevel") { reader throws(CompactCodingError) in try reader.string("logLevel") }
        locationAuthorization = try reader.optional("locationAuthorization") { reader throws(CompactCodingError) in try reader.string("locationAuthorization") }
        scenes = try reader.optional("scenes") { reader throws(CompactCodingError) in try WireSceneManifest(from: &reader) }
        sceneSessions = try reader.optional("sceneSessions") { reader throws(CompactCodingError) in
            try reader.array("sceneSessions") { reader throws(CompactCodingError) in try WireSceneSession(from: &reader) }
        }
        transfers = try reader.optional("transfers") { reader throws(CompactCodingError) in
            try reader.array("transfers") { reader throws(CompactCodingError) in try WireTransfer(from: &reader) }
        }
        launchCallbacks = try reader.optional("launchCallbacks") { reader throws(CompactCodingError) in
            let requests = try reader.array("launchCallbacks") { reader throws(CompactCodingError) in
                try CompactCoding.decodeCallback(Array(try reader.data("launchCallbacks")))
            }
            // The launch's, in their order: what else the host sends depends on what came before.
            // (A plain loop: the key path and generic algorithms this once took cost 0.04 ms in
            // the plugin, whose code runs cold.)
            let order: [WireCallback] = [.willFinishLaunching, .didFinishLaunching, .didBecomeActive]
            for (index, request) in requests.enumerated() where index >= order.count || request.callback != order[index] {
                throw CompactCodingError(description: "a compact configuration whose launch callbacks are \(requests.map { $0.callback.rawValue })")
            }
            return requests
        }
        deliveredNotifications = try reader.optional("deliveredNotifications") { reader throws(CompactCodingError) in
            try reader.array("deliveredNotifications") { reader throws(CompactCodingError) in try WireDeliveredNotification(from: &reader) }
        }
        try reader.finish()
    }
}

extension WireBackgroundTasks {
    func write(to writer: inout CompactWriter) {
        writer.write(modes)
        writer.write(permittedIdentifiers)
        writer.write(pending) { writer, request in
            writer.write(request.identifier)
            writer.write(request.kind.rawValue)
            writer.write(request.earliestBeginDate) { $0.write($1) }
            writer.write(request.requiresNetworkConnectivity)
            writer.write(request.requiresExternalPower)
        }
        writer.write(maximumPendingRefresh)
        writer.write(maximumPendingProcessing)
        writer.write(available)
    }

    init(from reader: inout CompactReader) throws(CompactCodingError) {
        self.init(
            modes: try reader.strings("modes"), permittedIdentifiers: try reader.strings("permittedIdentifiers"),
            pending: try reader.array("pending") { reader throws(CompactCodingError) in
                WireTaskRequest(
                    identifier: try reader.string("identifier"), kind: try reader.value(WireTaskRequest.Kind.self, "kind"),
                    earliestBeginDate: try reader.optional("earliestBeginDate") { reader throws(CompactCodingError) in try reader.double("earliestBeginDate") },
                    requiresNetworkConnectivity: try reader.bool("requiresNetworkConnectivity"),
                    requiresExternalPower: try reader.bool("requiresExternalPower"))
            },
            maximumPendingRefresh: try reader.int("maximumPendingRefresh"),
            maximumPendingProcessing: try reader.int("maximumPendingProcessing"), available: try reader.bool("available"))
    }
}

extension WireSandbox {
    func write(to writer: inout CompactWriter) {
        writer.write(entitlements)
        writer.write(uid) { $0.write($1) }
        writer.write(gid) { $0.write($1) }
        writer.write(groups) { writer, groups in writer.write(groups) { $0.write($1) } }
        writer.write(writablePaths)
        writer.write(processLimit) { $0.write($1) }
        writer.write(groupContainers) { writer, containers in
            writer.write(containers.sorted { $0.key < $1.key }) { writer, entry in
                writer.write(entry.key)
                writer.write(entry.value)
            }
        }
        writer.write(filter) { $0.write($1) }
        writer.write(filterNotifies) { $0.write($1) }
        writer.write(readablePaths) { $0.write($1) }
        writer.write(namespaced) { $0.write($1) }
    }

    init(from reader: inout CompactReader) throws(CompactCodingError) {
        self.init(
            entitlements: try reader.strings("entitlements"),
            uid: try reader.optional("uid") { reader throws(CompactCodingError) in try reader.uint32("uid") },
            gid: try reader.optional("gid") { reader throws(CompactCodingError) in try reader.uint32("gid") },
            groups: try reader.optional("groups") { reader throws(CompactCodingError) in
                try reader.array("groups") { reader throws(CompactCodingError) in try reader.uint32("groups") }
            },
            writablePaths: try reader.strings("writablePaths"),
            processLimit: try reader.optional("processLimit") { reader throws(CompactCodingError) in try reader.uint64("processLimit") },
            groupContainers: try reader.optional("groupContainers") { reader throws(CompactCodingError) in
                let entries = try reader.array("groupContainers") { reader throws(CompactCodingError) in
                    (try reader.string("groupContainers"), try reader.string("groupContainers"))
                }
                return Dictionary(entries) { _, last in last }
            })
        filter = try reader.optional("filter") { reader throws(CompactCodingError) in try reader.data("filter") }
        filterNotifies = try reader.optional("filterNotifies") { reader throws(CompactCodingError) in try reader.bool("filterNotifies") }
        readablePaths = try reader.optional("readablePaths") { reader throws(CompactCodingError) in try reader.strings("readablePaths") }
        namespaced = try reader.optional("namespaced") { reader throws(CompactCodingError) in try reader.bool("namespaced") }
    }
}

extension WireSceneManifest {
    func write(to writer: inout CompactWriter) {
        writer.write(supportsMultipleScenes)
        writer.write(configurations) { writer, configuration in
            writer.write(configuration.name)
            writer.write(configuration.delegateClassName)
            writer.write(configuration.sceneClassName) { $0.write($1) }
        }
    }

    init(from reader: inout CompactReader) throws(CompactCodingError) {
        self.init(
            supportsMultipleScenes: try reader.bool("supportsMultipleScenes"),
            configurations: try reader.array("configurations") { reader throws(CompactCodingError) in
                Configuration(
                    name: try reader.string("name"), delegateClassName: try reader.string("delegateClassName"),
                    sceneClassName: try reader.optional("sceneClassName") { reader throws(CompactCodingError) in try reader.string("sceneClassName") })
            })
    }
}

extension WireSceneSession {
    func write(to writer: inout CompactWriter) {
        writer.write(identifier)
        for text in [configuration, userInfo, activityType, activityUserInfo] { writer.write(text) { $0.write($1) } }
        writer.write(discarded ?? false)
    }

    init(from reader: inout CompactReader) throws(CompactCodingError) {
        func text(_ what: String) throws(CompactCodingError) -> String? {
            try reader.optional(what) { reader throws(CompactCodingError) in try reader.string(what) }
        }
        let identifier = try reader.string("identifier")
        self.init(
            identifier: identifier, configuration: try text("configuration"), userInfo: try text("userInfo"),
            activityType: try text("activityType"), activityUserInfo: try text("activityUserInfo"))
        discarded = try reader.bool("discarded") ? true : nil
    }
}

extension WireTransfer {
    func write(to writer: inout CompactWriter) {
        writer.write(session)
        writer.write(task)
        writer.write(kind.rawValue)
        writer.write(url)
        writer.write(file) { $0.write($1) }
        writer.write(method) { $0.write($1) }
        writer.write(isDiscretionary)
        writer.write(sessionSendsLaunchEvents)
        writer.write(taskDescription) { $0.write($1) }
        writer.write(headers.map { $0.sorted { $0.key < $1.key }.flatMap { [$0.key, $0.value] } }) { $0.write($1) { $0.write($1) } }
        writer.write(earliestBegin) { $0.write($1) }
    }

    init(from reader: inout CompactReader) throws(CompactCodingError) {
        self.init(
            session: try reader.string("session"), task: try reader.int("task"), kind: try reader.value(Kind.self, "kind"),
            url: try reader.string("url"),
            file: try reader.optional("file") { reader throws(CompactCodingError) in try reader.string("file") },
            method: try reader.optional("method") { reader throws(CompactCodingError) in try reader.string("method") },
            isDiscretionary: try reader.bool("isDiscretionary"), sessionSendsLaunchEvents: try reader.bool("sessionSendsLaunchEvents"),
            taskDescription: try reader.optional("taskDescription") { reader throws(CompactCodingError) in try reader.string("taskDescription") })
        let fields = try reader.optional("headers") { reader throws(CompactCodingError) in try reader.strings("headers") }
        headers = fields.map { fields in
            Dictionary(stride(from: 0, to: fields.count - 1, by: 2).map { (fields[$0], fields[$0 + 1]) }) { $1 }
        }
        earliestBegin = try reader.optional("earliestBegin") { reader throws(CompactCodingError) in try reader.double("earliestBegin") }
    }
}

extension WireConfiguration {
    /// A configuration with every optional part present and every array non-empty: the launch
    /// template decodes one before its first fork, so each fork finds what decoding touches
    /// made and paged in, and the tests check that each part survives the compact layout.
    package static var everyPart: WireConfiguration {
        var sandbox = WireSandbox(
            entitlements: ["every.part"], uid: 1, gid: 2, groups: [3], writablePaths: ["/w"], processLimit: 4, groupContainers: ["group.a": "/a", "group.b": "/b"])
        sandbox.filter = Data([1, 2, 3, 4, 5, 6, 7, 8])
        sandbox.filterNotifies = true
        sandbox.readablePaths = ["/r"]
        sandbox.namespaced = true
        var configuration = WireConfiguration(
            bundleIdentifier: "every.part", bundleName: "EveryPart", bundlePath: "/EveryPart.app", pluginPath: "/EveryPart.app/libEveryPart.so",
            delegateClassName: "EveryPart.Delegate", containerPath: "/c", launchReason: "user", capabilities: ["CAP_NET_RAW"], openFileLimit: 5,
            sandbox: sandbox)
        configuration.launchPayload = "{\"aps\":{}}"
        configuration.backgroundTasks = WireBackgroundTasks(
            modes: ["fetch"], permittedIdentifiers: ["every.part.refresh"],
            pending: [WireTaskRequest(identifier: "every.part.refresh", kind: .appRefresh, earliestBeginDate: 6.5, requiresNetworkConnectivity: true)],
            maximumPendingRefresh: 7, maximumPendingProcessing: 8, available: true)
        configuration.logLevel = "debug"
        configuration.locationAuthorization = "authorizedAlways"
        configuration.scenes = WireSceneManifest(
            supportsMultipleScenes: true,
            configurations: [WireSceneManifest.Configuration(name: "Default", delegateClassName: "EveryPart.Scene", sceneClassName: "UIWindowScene")])
        configuration.sceneSessions = [
            WireSceneSession(identifier: "s1", configuration: "Default", userInfo: "{}", activityType: "a", activityUserInfo: "{\"k\":1}")
        ]
        configuration.sceneSessions?[0].discarded = true
        configuration.transfers = [
            WireTransfer(
                session: "session", task: 9, kind: .upload, url: "http://localhost/", file: "/f", method: "PUT", isDiscretionary: true, taskDescription: "t",
                headers: ["X-A": "1", "X-B": "2"], earliestBegin: 12.5)
        ]
        configuration.launchCallbacks = [
            WireCallbackRequest(id: 10, callback: .willFinishLaunching, state: .background, stateAfter: .inactive, backgroundTimeRemaining: 11.5),
            WireCallbackRequest(id: 11, callback: .didFinishLaunching, state: .inactive),
            WireCallbackRequest(id: 12, callback: .didBecomeActive, state: .active),
        ]
        configuration.deliveredNotifications = [
            WireDeliveredNotification(
                request: WireNotificationRequest(
                    identifier: "n", title: "t", subtitle: "s", body: "b", categoryIdentifier: "c", userInfo: "{}", interval: 60,
                    calendar: ["hour": 9, "minute": 30], repeats: true),
                date: 13.5)
        ]
        return configuration
    }
}
