package import Foundation
package import AppHostProtocol

/// What carries out the host's HTTP transfers (README.md, "Background transfers"): the apphost
/// executable gives its Supervisor one (AppHostTransfers' TransferService, on async-http-client),
/// so that only the host links an HTTP client, and neither an app nor an app's tests do.
package protocol TransferRunner: Sendable {
    /// Starts the job; `report` gets its updates from another thread. A job already running is
    /// left alone.
    func start(_ job: TransferJob, report: @escaping @Sendable (TransferUpdate) -> Void)
    /// Stops the job (a download's part file stays, for a later resume); it reports nothing more.
    func stop(_ id: String)
}

/// What one transfer needs: its request and its file in the host's state directory.
package struct TransferJob: Sendable {
    package var id: String
    package var transfer: WireTransfer
    /// A download's part file (resumed from its size), or an upload's body.
    package var file: URL
    /// A download's validator from an earlier attempt, for If-Range.
    package var validator: String?

    package init(id: String, transfer: WireTransfer, file: URL, validator: String? = nil) {
        self.id = id
        self.transfer = transfer
        self.file = file
        self.validator = validator
    }
}

/// What a transfer reports, in order: started (once per attempt), progress, then one end.
package enum TransferUpdate: Sendable {
    /// The response's head came: its status, the bytes expected in all, and what validates a
    /// later Range request (ETag or Last-Modified).
    case started(status: Int, expected: Int64?, validator: String?, resumedAt: Int64)
    case progress(received: Int64, sent: Int64)
    case ended(TransferOutcome)
}

package enum TransferOutcome: Sendable {
    case completed(status: Int, received: Int64, sent: Int64, responseBody: Data?)
    case failed(code: Int, message: String, status: Int?)
}
