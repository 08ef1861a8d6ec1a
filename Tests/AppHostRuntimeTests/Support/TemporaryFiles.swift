import Foundation
@testable import AppHostRuntime

/// A directory of its own under the temporary directory for the files one test writes, removed
/// with it: a suite keeps one as a stored property, and swift-testing releases the suite's
/// instance after each test.
final class TemporaryFiles {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("apphost-unit-\(UUID().uuidString)")

    deinit {
        try? FileManager.default.removeItem(at: directory)
    }

    /// The path of `name` in the directory, which is made on first use.
    func url(_ name: String) throws -> URL {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory.appendingPathComponent(name)
    }

    /// An app bundle named `name` (an empty plugin: the bundle is read, never loaded), with
    /// `info` added to its Info.plist.
    func bundle(_ name: String, identifier: String, info: [String: Any] = [:]) throws -> AppBundle {
        let url = try self.url("\(UUID().uuidString)/\(name).app")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        let plist: [String: Any] = [
            "CFBundleIdentifier": identifier, "CFBundleExecutable": "lib\(name).so", "ApplicationDelegateClassName": "\(name).AppDelegate",
        ].merging(info) { $1 }
        try PropertyListSerialization.data(fromPropertyList: plist, format: .xml, options: 0).write(to: url.appendingPathComponent("Info.plist"))
        try Data().write(to: url.appendingPathComponent("lib\(name).so"))
        return try AppBundle(url: url)
    }

    /// A policy file with this text.
    func policy(_ text: String) throws -> URL {
        let url = try url("policy-\(UUID().uuidString).json")
        try Data(text.utf8).write(to: url)
        return url
    }
}
