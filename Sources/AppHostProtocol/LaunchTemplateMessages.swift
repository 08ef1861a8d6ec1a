import Foundation
@_implementationOnly import CAppHostShims

// The launch template's socket (docs/launching.md, "How apps are launched"): the host asks the template
// to start an app process, the template answers with its pid (and a pidfd) or why it could not.
// One datagram each way (SOCK_SEQPACKET), a request at a time. The template runs no app code
// and hears only from its host.

/// The argument that makes apphost's binary run as the launch template (`apphost __template`).
package let launchTemplateArgument = "__template"

/// The SDK that `swift package bundle-app` links beside the binaries of its build, and that the
/// template loads when it starts (docs/launching.md, "How apps are launched"); its `soname`, which
/// the plugins linked against it name, is `libAppHostKit-HASH.so`.
package let launchTemplateSDKFileName = "libAppHostKit.so"

/// The variables CoreFoundation reads once, at start-up, that differ from app to app
/// (Containers.environment): the template starts with a placeholder for each, which each fork
/// fills with its app's value (apphost_template_prepare).
package let launchTemplatePlaceholders = ["HOME", "CFFIXED_USER_HOME", "TMPDIR", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"]

/// In a standby's environment (an app process made ahead of its launch): the capabilities an
/// app of its host may keep, comma-separated; it drops every other from its bounding set while
/// it waits.
package let standbyCapabilitiesVariable = "APPHOST_STANDBY_CAPABILITIES"

/// In a standby's environment when it runs in namespaces of its own: its init passes it the
/// mount namespace it prepares, which it joins before its launch.
package let standbyNamespaceVariable = "APPHOST_STANDBY_NAMESPACE"

/// The placeholders as a process starts with them (the template, an exec'd standby): each the
/// longest value the variable can take, written over in place once its container is known.
package let launchTemplatePlaceholderEnvironment = launchTemplatePlaceholders.map {
    "\($0)=" + String(repeating: "/", count: Int(APPHOST_TEMPLATE_PLACEHOLDER_LENGTH))
}

/// In a standby's environment when it was exec'd (the standby launcher), not forked from the
/// launch template: it loads the SDK and does the SDK's first work itself while it waits.
package let standbyExecedVariable = "APPHOST_STANDBY_EXECED"

/// The variables that put an app process in its container at `path`: those of the
/// placeholders. The host sets them when it starts the process; a process made ahead of its
/// launch (a standby) sets them from its configuration's container.
package func containerEnvironment(_ path: String) -> [String] {
    [
        "HOME=\(path)",
        // Foundation on Linux takes NSHomeDirectory() and the Documents look-up from this,
        // not from HOME; Caches and Application Support come from the XDG variables.
        "CFFIXED_USER_HOME=\(path)",
        "TMPDIR=\(path)/tmp/",
        "XDG_DATA_HOME=\(path)/Library/Application Support",
        "XDG_CACHE_HOME=\(path)/Library/Caches",
        "XDG_CONFIG_HOME=\(path)/Library/Preferences",
    ]
}

/// One app process to start.
package struct LaunchTemplateRequest: Sendable {
    /// Namespaces.Support.flags: 0 for none.
    package var namespaces: Int32
    /// In namespaces: the init's path and arguments (apphost-init …).
    package var initArguments: [String]
    /// The app process's whole environment.
    package var environment: [String]
    /// Whether the last descriptor passed is a cgroup v2 directory to start the process in.
    package var intoCgroup: Bool
    /// Whether the app process must start in that cgroup or not at all: its configuration is
    /// already on its control socket, so it would run before the host could move it.
    package var requireCgroup: Bool

    package init(namespaces: Int32, initArguments: [String], environment: [String], intoCgroup: Bool, requireCgroup: Bool = false) {
        self.namespaces = namespaces
        self.initArguments = initArguments
        self.environment = environment
        self.intoCgroup = intoCgroup
        self.requireCgroup = requireCgroup
    }
}

/// The template's answer: the started process's pid (its pidfd passed with it), or what failed.
package struct LaunchTemplateReply: Sendable {
    package var pid: Int32?
    /// Whether it started in the cgroup the request passed.
    package var startedInCgroup: Bool?
    package var errno: Int32?
    package var failure: String?

    package init(pid: Int32? = nil, startedInCgroup: Bool? = nil, errno: Int32? = nil, failure: String? = nil) {
        self.pid = pid
        self.startedInCgroup = startedInCgroup
        self.errno = errno
        self.failure = failure
    }
}

extension LaunchTemplateRequest {
    /// The most descriptors a request carries: stdin, stdout, stderr, control, diagnostics, the
    /// init's channel and a cgroup directory.
    package static let maximumDescriptors = 7
    /// The largest request, in bytes (paths and an environment).
    package static let maximumSize = 64 * 1024
}

// The request and the reply in the compact layout of ConfigurationCoding.swift: one of each per
// launch, on its path, where Foundation's JSON coder took 0.15 ms in the template.

extension LaunchTemplateRequest {
    package var compactBytes: [UInt8] {
        var writer = CompactWriter()
        writer.write(UInt32(bitPattern: namespaces))
        writer.write(initArguments)
        writer.write(environment)
        writer.write(intoCgroup)
        writer.write(requireCgroup)
        return writer.bytes
    }

    package init(compact bytes: ArraySlice<UInt8>) throws(CompactCodingError) {
        var reader = CompactReader(bytes)
        self.init(
            namespaces: Int32(bitPattern: try reader.uint32("namespaces")), initArguments: try reader.strings("initArguments"),
            environment: try reader.strings("environment"), intoCgroup: try reader.bool("intoCgroup"), requireCgroup: try reader.bool("requireCgroup"))
        try reader.finish()
    }
}

extension LaunchTemplateReply {
    package var compactBytes: [UInt8] {
        var writer = CompactWriter()
        writer.write(pid.map { UInt32(bitPattern: $0) }) { $0.write($1) }
        writer.write(startedInCgroup) { $0.write($1) }
        writer.write(errno.map { UInt32(bitPattern: $0) }) { $0.write($1) }
        writer.write(failure) { $0.write($1) }
        return writer.bytes
    }

    package init(compact bytes: ArraySlice<UInt8>) throws(CompactCodingError) {
        var reader = CompactReader(bytes)
        self.init(
            pid: try reader.optional("pid") { reader throws(CompactCodingError) in Int32(bitPattern: try reader.uint32("pid")) },
            startedInCgroup: try reader.optional("startedInCgroup") { reader throws(CompactCodingError) in try reader.bool("startedInCgroup") },
            errno: try reader.optional("errno") { reader throws(CompactCodingError) in Int32(bitPattern: try reader.uint32("errno")) },
            failure: try reader.optional("failure") { reader throws(CompactCodingError) in try reader.string("failure") })
        try reader.finish()
    }
}
