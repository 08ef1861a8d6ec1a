import Foundation
import Testing

@testable import AppHostRuntime

@Suite struct StateDirectoryTests {
    /// `apphost container` of an app whose container lives in a disk image no host has mounted
    /// points at the image too: the directory it prints is empty.
    @Test func anUnmountedImageIsNamedAndNoImageIsNot() throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("apphost-state-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: state) }
        try FileManager.default.createDirectory(at: state.appendingPathComponent("containers/com.example.notes"), withIntermediateDirectories: true)
        let directory = StateDirectory(state)
        #expect(try directory.unmountedImage(of: "notes") == nil, "accounting or quotas: the files are in the directory")
        let images = state.appendingPathComponent("storage/containers")
        try FileManager.default.createDirectory(at: images, withIntermediateDirectories: true)
        try Data().write(to: images.appendingPathComponent("com.example.notes.ext4"))
        #expect(try directory.unmountedImage(of: "notes") == images.appendingPathComponent("com.example.notes.ext4").path)
    }
}
