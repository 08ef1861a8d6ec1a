import ArgumentParser
import Logging
import NIOCore

/// Parses its arguments (swift-argument-parser's parsing takes its Mutex) and writes a buffer.
struct Tool: ParsableCommand {
    @Option var count = 1

    func run() {
        var buffer = ByteBufferAllocator().buffer(capacity: 16)
        buffer.writeString(String(repeating: "x", count: count))
        Logger(label: "tool").info("wrote \(buffer.readableBytes) bytes")
        print("tool wrote \(buffer.readableBytes)")
    }
}

Tool.main()
