import Foundation
import AppHostProtocol

// Running the transfers (docs/transfers.md, "Background transfers"): each starts when its conditions
// hold (a service, its begin date, the network, power for a discretionary one, its app
// installed) and pauses when they no longer do; the service's reports move its record on.
extension Transfers {
    /// Starts the transfers whose conditions hold and pauses those whose no longer do; `started`
    /// names those started, for the conditions line.
    mutating func reconsider(_ facts: TransferDesk.Facts) -> (started: [String], effects: [Effect]) {
        var started: [String] = []
        var effects: [Effect] = []
        // The apps whose allowance this pass has set already (measuring walks the container and
        // the app's files: once per app a pass, not once per transfer started).
        var measured: [String: TransferAllowance] = [:]
        for index in records.indices where !records[index].isDone {
            let record = records[index]
            guard !unkept.contains(record.id) else { continue }
            switch (record.phase, waitsFor(record, facts)) {
            case (.running, let reason?):
                records[index].phase = .waiting
                effects += [.stop(record.id), Self.announce(record, "paused: waiting for \(reason)")]
            case (.waiting, nil):
                records[index].phase = .running
                let file = record.transfer.kind == .download ? store.partFile(record.id) : store.bodyFile(record.id)
                let allowance = measured[record.app] ?? (facts.app(record.app) == nil ? nil : allowance(for: record.app, facts))
                measured[record.app] = allowance
                var job = TransferJob(
                    id: record.id, app: record.app, transfer: record.transfer, file: file, validator: record.validator, allowance: allowance)
                job.credential = credentials[record.id]
                job.trustedCertificate = trusted[record.id]
                job.challengeable = record.challengeDeclined != true
                effects += [.start(job), Self.announce(record, "started")]
                started.append("\(facts.app(record.app)?.name ?? record.app) \(Self.label(record))")
            default:
                break
            }
        }
        // Wakes the transfers at the earliest begin date still to come (on the scheduler's
        // clock, which `advance` moves: it reconsiders them too).
        let dates = records.compactMap { $0.phase == .waiting ? $0.transfer.earliestBegin : nil }.filter { $0 > facts.now }
        if let next = dates.min(), beginArmed.map({ next < $0 }) ?? true {
            beginArmed = next
            effects.append(.passAfter(.seconds(double: next - facts.now)))
        }
        return (started, effects)
    }

    /// The service's report on a running transfer.
    mutating func update(_ id: String, _ update: TransferUpdate, _ facts: TransferDesk.Facts) -> [Effect] {
        guard let index = index(id), records[index].phase == .running else { return [] }
        switch update {
        case .started(_, let expected, let validator, let resumedAt):
            records[index].bytesExpected = expected
            if records[index].transfer.kind == .download { records[index].validator = validator }
            records[index].bytesReceived = resumedAt
            var effects: [Effect] = []
            if resumedAt > 0 {
                records[index].resumes += 1
                let record = records[index]
                effects.append(Self.announce(record, "resumed at byte \(resumedAt) with a Range request"))
                // The delegate's didResumeAtOffset, while the app runs.
                if record.transfer.kind == .download, let run = facts.app(record.app)?.run, run.hearsProgress {
                    effects.append(.send(.transferProgress(
                        session: record.transfer.session, task: record.transfer.task, received: resumedAt, sent: 0,
                        expected: record.bytesExpected, resumedAt: resumedAt), app: record.app, run: run.id))
                }
            }
            save()
            return effects
        case .progress(let received, let sent):
            records[index].bytesReceived = received
            records[index].bytesSent = sent
            // The delegate's didWriteData and didSendBodyData, while the app runs (not suspended).
            let record = records[index]
            guard let run = facts.app(record.app)?.run, run.hearsProgress else { return [] }
            return [.send(.transferProgress(
                session: record.transfer.session, task: record.transfer.task, received: received, sent: sent,
                expected: record.bytesExpected), app: record.app, run: run.id)]
        case .ended(let outcome):
            return ended(index, outcome, facts)
        }
    }

    private mutating func ended(_ index: Int, _ outcome: TransferOutcome, _ facts: TransferDesk.Facts) -> [Effect] {
        var record = records[index]
        record.phase = .finished
        switch outcome {
        case .completed(let status, let received, let sent, let body, let headers):
            record.bytesReceived = received
            record.bytesSent = sent
            record.result = WireTransferEvent(
                transfer: record.transfer, statusCode: status, bytesReceived: received, bytesSent: sent, responseBody: body)
            record.result?.headers = headers.isEmpty ? nil : headers
            if record.transfer.kind == .upload { fileRemovals.append(record.id) }
        case .failed(let code, let message, let status):
            record.result = WireTransferEvent(
                transfer: record.transfer, statusCode: status, bytesReceived: record.bytesReceived, bytesSent: record.bytesSent,
                errorCode: code, errorMessage: message)
            // A download the connection failed (not the server's refusal, nor the storage
            // limit) keeps what it had, for its resume data, as on iOS.
            if [WireTransfer.ErrorCode.networkConnectionLost, WireTransfer.ErrorCode.timedOut].contains(code), let data = resumeData(record) {
                record.result?.resumeData = data
            } else {
                fileRemovals.append(record.id)
            }
        case .challenged(let method, let realm):
            records[index] = record
            return challenged(record.id, method: method, realm: realm, facts)
        case .untrusted(let certificate):
            records[index] = record
            return untrusted(record.id, certificate, facts)
        }
        record.result?.bytesExpected = record.bytesExpected
        records[index] = record
        save()
        let result = record.result
        let said = Self.announce(record, result?.errorCode == nil
            ? "finished: HTTP \(result?.statusCode ?? 0), \(record.bytesReceived) bytes received, \(record.bytesSent) sent"
            : "failed: \(result?.errorMessage ?? "") (URLError \(result?.errorCode ?? 0))")
        return [said] + (facts.app(record.app).map { deliver(to: $0, facts) } ?? [])
    }
}
