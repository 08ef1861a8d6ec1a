import AppHostProtocol
import Foundation
import Testing
@testable import AppHostRuntime

/// The background transfers' rules (TransferDesk), on the scheduler's virtual clock (the `now`
/// of the facts) and with apps described by value: no host, no process, no network. Each test
/// drives a transfer through the desk's own interface (created by the app's message, kept,
/// started, ended by the service's report) and reads the effects it returns.
@Suite struct TransferDeskTests {
    static let app = "com.example.episodes"
    static let other = "com.example.other"

    /// A desk in a directory of its own, the apps the facts describe, and the scheduler's time.
    final class Bench {
        let directory: URL
        let desk: TransferDesk
        var apps: [String: TransferDesk.App] = [:]
        var now: Double = 1_000_000
        var network = NetworkState.online

        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("transfer-desk-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory.appendingPathComponent("containers"), withIntermediateDirectories: true)
            desk = TransferDesk(store: TransferStore(stateDirectory: directory), hasService: true)
            for identifier in [TransferDeskTests.app, TransferDeskTests.other] {
                let container = directory.appendingPathComponent("containers/\(identifier)").path
                try FileManager.default.createDirectory(atPath: container, withIntermediateDirectories: true)
                apps[identifier] = TransferDesk.App(identifier: identifier, name: identifier, forceQuit: false, container: container, run: nil)
            }
        }

        deinit { try? FileManager.default.removeItem(at: directory) }

        var facts: TransferDesk.Facts {
            let apps = apps
            return TransferDesk.Facts(
                now: now, network: network, power: .battery, app: { apps[$0] }, usage: { _ in (0, 1 << 30) })
        }

        /// Puts the app in a run of its own, in `state`, its launch over, kept running.
        func run(_ app: String, _ launch: Int, _ state: AppState = .active, launchFinished: Bool = true, keptRunning: Bool = true) {
            apps[app]?.run = TransferDesk.Run(
                id: RunID(app: AppID(index: app == TransferDeskTests.app ? 0 : 1), launch: launch), state: state,
                isAlive: true, isLive: true, isEnding: false, launchFinished: launchFinished, justLaunched: false, keptRunning: keptRunning)
        }

        func runID(_ app: String) throws -> RunID { try #require(apps[app]?.run?.id) }

        /// The app's run creates the transfer; once kept, it starts. Returns its id.
        func create(_ app: String, session: String = "s", task: Int = 1, earliestBegin: Double? = nil) throws -> String {
            let transfer = WireTransfer(
                session: session, task: task, kind: .download, url: "http://example.com/\(session)/\(task)", earliestBegin: earliestBegin)
            let (violation, effects) = desk.receive(.transferCreated(transfer), from: try #require(apps[app]), networkEntitled: true, facts)
            #expect(violation == nil)
            guard case .whenSaved(let id)? = effects.first, effects.count == 1 else {
                Issue.record("a new transfer is kept before anything else: \(effects)")
                return ""
            }
            let started = desk.kept(id, facts)
            if earliestBegin == nil { #expect(started.map(describe).contains("start \(id)")) }
            return id
        }

        /// The service reports the transfer failed (nothing to place in the container).
        func fail(_ id: String) -> [TransferDesk.Effect] {
            desk.update(id, .ended(.failed(code: WireTransfer.ErrorCode.cannotConnectToHost, message: "refused", status: nil)), facts)
        }

        /// The effects in words, without the announcements' prose.
        func describe(_ effect: TransferDesk.Effect) -> String {
            switch effect {
            case .send(.transferFinished(let event), let app, let run):
                "send \(event.id ?? "?") \(event.challenge == nil ? "" : "challenge ")to \(app) \(run)"
            case .send(let message, let app, let run): "send \(message) to \(app) \(run)"
            case .wake(let app, let session): "wake \(app) \(session)"
            case .announce(let app, _): "announce \(app)"
            case .start(let job): "start \(job.id)"
            case .stop(let id): "stop \(id)"
            case .copyBody(let id, _, _): "copy \(id)"
            case .whenSaved(let id): "when saved \(id)"
            case .pass: "pass"
            case .passAfter(let delay): "pass after \(delay)"
            }
        }

        func describe(_ effects: [TransferDesk.Effect]) -> [String] {
            effects.map(describe).filter { !$0.hasPrefix("announce") }
        }
    }

    /// An app that crashes at each wake is not launched for its transfers forever: three wakes
    /// that did not deliver, then it waits for the app to run for another reason.
    @Test func aFinishedTransferWakesItsAppThreeTimesAtMost() throws {
        let bench = try Bench()
        bench.run(Self.app, 0, .background)
        let id = try bench.create(Self.app)
        bench.apps[Self.app]?.run = nil
        #expect(bench.describe(bench.fail(id)) == ["wake \(Self.app) s"])
        // Each wake's run ends before its callback is sent: the next pass wakes it again.
        #expect(bench.describe(bench.desk.deliver(to: try #require(bench.apps[Self.app]), bench.facts)) == ["wake \(Self.app) s"])
        #expect(bench.describe(bench.desk.deliver(to: try #require(bench.apps[Self.app]), bench.facts)) == ["wake \(Self.app) s"])
        #expect(bench.describe(bench.desk.deliver(to: try #require(bench.apps[Self.app]), bench.facts)) == [], "a fourth wake")
        // The user opens it: it gets the transfer directly.
        bench.run(Self.app, 5)
        #expect(bench.describe(bench.desk.deliver(to: try #require(bench.apps[Self.app]), bench.facts))
            == ["send \(id) to \(Self.app) \(try bench.runID(Self.app))"])
    }

    /// A launching app gets what is owed once its launch is over, directly (not by a wake, which
    /// would wait for the background), and not between didFinishLaunching and the activation.
    @Test func anAppStillLaunchingGetsItsTransfersOnceItsLaunchIsOver() throws {
        let bench = try Bench()
        bench.run(Self.app, 0)
        let id = try bench.create(Self.app)
        bench.run(Self.app, 1, .launching, launchFinished: false)
        #expect(bench.describe(bench.fail(id)) == [], "neither sent nor woken for while it launches")
        bench.apps[Self.app]?.run?.launchFinished = true
        bench.apps[Self.app]?.run?.justLaunched = true
        #expect(bench.describe(bench.desk.deliver(to: try #require(bench.apps[Self.app]), bench.facts)) == [])
        bench.run(Self.app, 1)
        let run = try bench.runID(Self.app)
        #expect(bench.describe(bench.desk.deliver(to: try #require(bench.apps[Self.app]), bench.facts)) == ["send \(id) to \(Self.app) \(run)"])
        #expect(bench.describe(bench.desk.deliver(to: try #require(bench.apps[Self.app]), bench.facts)) == [], "sent to a run once")
        // Its acknowledgement ends it; one from a run it was not sent to is a violation.
        bench.run(Self.app, 2)
        let (wrong, _) = bench.desk.receive(.transferDelivered(session: "s", task: 1), from: try #require(bench.apps[Self.app]), networkEntitled: true, bench.facts)
        #expect(wrong == "it said task 1 of background session \"s\" was delivered, but the host delivered no such transfer to it")
        bench.run(Self.app, 1)
        let (violation, _) = bench.desk.receive(.transferDelivered(session: "s", task: 1), from: try #require(bench.apps[Self.app]), networkEntitled: true, bench.facts)
        #expect(violation == nil)
        #expect(bench.desk.listing(bench.facts).isEmpty)
    }

    /// A force quit cancels the app's unfinished transfers, and nothing wakes or launches the
    /// app for them: it is told (cancelled, reason 0) at the next launch by the user.
    @Test func aForceQuitAppsTransfersAreCancelledAndToldAtTheUsersNextLaunch() throws {
        let bench = try Bench()
        bench.run(Self.app, 0)
        let id = try bench.create(Self.app)
        bench.apps[Self.app]?.run = nil
        bench.apps[Self.app]?.forceQuit = true
        #expect(bench.describe(bench.desk.cancelAll(of: Self.app, because: "the user force quit the app", reasonCode: 0)) == ["stop \(id)"])
        #expect(bench.describe(bench.desk.deliver(to: try #require(bench.apps[Self.app]), bench.facts)) == [], "no wake while force quit")
        #expect(bench.desk.listing(bench.facts).map(\.state) == ["failed"])
        bench.apps[Self.app]?.forceQuit = false
        bench.run(Self.app, 1)
        let effects = bench.desk.deliver(to: try #require(bench.apps[Self.app]), bench.facts)
        guard case .send(.transferFinished(let event), _, let run)? = effects.first else {
            Issue.record("the user's launch is told: \(effects)")
            return
        }
        #expect(run == (try bench.runID(Self.app)))
        #expect(event.errorCode == WireTransfer.ErrorCode.cancelled && event.cancelledReason == 0)
    }

    /// A server's challenge goes to the run that runs the app; an answer from another run is a
    /// violation, and the right run's credential restarts the transfer with it.
    @Test func aChallengeIsAskedOfTheRunningRunAndItsAnswerTakenFromItOnly() throws {
        let bench = try Bench()
        bench.run(Self.app, 3)
        let asked = try bench.runID(Self.app)
        let id = try bench.create(Self.app)
        let effects = bench.desk.update(id, .ended(.challenged(method: .basic, realm: "shows")), bench.facts)
        #expect(bench.describe(effects) == ["send \(id) challenge to \(Self.app) \(asked)"])
        let answer = WireChallengeAnswer(disposition: .useCredential, user: "ann", password: "secret", persistence: .forSession)
        bench.run(Self.app, 4)
        let (violation, none) = bench.desk.receive(
            .transferChallengeAnswered(session: "s", task: 1, answer: answer), from: try #require(bench.apps[Self.app]), networkEntitled: true, bench.facts)
        #expect(violation?.contains("did not ask it") == true)
        #expect(none.isEmpty)
        bench.run(Self.app, 3)
        let (accepted, restart) = bench.desk.receive(
            .transferChallengeAnswered(session: "s", task: 1, answer: answer), from: try #require(bench.apps[Self.app]), networkEntitled: true, bench.facts)
        #expect(accepted == nil)
        let jobs = restart.compactMap { if case .start(let job) = $0 { job } else { nil } }
        #expect(jobs.map(\.id) == [id])
        #expect(jobs.first?.credential == TransferCredential(user: "ann", password: "secret", method: .basic))
    }

    /// A server certificate the system does not trust is asked of the app as a 401 is, with the
    /// certificate; trusting it restarts the transfer trusting that certificate alone, any other
    /// answer fails it as iOS does (-1202), and cancelling cancels it (-999).
    @Test(arguments: [("trust", nil), ("performDefaultHandling", -1202), ("reject", -1202), ("cancel", -999)] as [(String, Int?)])
    func anUntrustedCertificateIsTheAppsToTrust(answer: String, error: Int?) throws {
        let bench = try Bench()
        bench.run(Self.app, 0)
        let run = try bench.runID(Self.app)
        let id = try bench.create(Self.app)
        let certificate = ServerCertificate(der: Data([0x30, 0x03, 0x02, 0x01, 0x01]), subject: "apphost-untrusted")
        let asked = bench.desk.update(id, .ended(.untrusted(certificate)), bench.facts)
        #expect(bench.describe(asked) == ["send \(id) challenge to \(Self.app) \(run)"])
        let sent = asked.compactMap { if case .send(.transferFinished(let challenge), _, _) = $0 { challenge } else { nil } }
        let challenge = try #require(sent.first, "the challenge is sent to the app: \(bench.describe(asked))")
        #expect(challenge.challenge?.method == .serverTrust && challenge.challenge?.certificate == certificate.der)
        #expect(challenge.challenge?.subject == "apphost-untrusted" && challenge.challenge?.host == "example.com" && challenge.challenge?.port == 443)
        let reply = switch answer {
        case "trust": WireChallengeAnswer(disposition: .useCredential, trustsServer: true)
        case "reject": WireChallengeAnswer(disposition: .rejectProtectionSpace)
        case "cancel": WireChallengeAnswer(disposition: .cancelAuthenticationChallenge)
        default: WireChallengeAnswer(disposition: .performDefaultHandling)
        }
        let (violation, effects) = bench.desk.receive(
            .transferChallengeAnswered(session: "s", task: 1, answer: reply), from: try #require(bench.apps[Self.app]), networkEntitled: true, bench.facts)
        #expect(violation == nil)
        let jobs = effects.compactMap { if case .start(let job) = $0 { job } else { nil } }
        let ends = effects.compactMap { if case .send(.transferFinished(let event), _, _) = $0 { event } else { nil } }
        if let error {
            #expect(jobs.isEmpty)
            #expect(ends.map(\.errorCode) == [error])
        } else {
            #expect(ends.isEmpty)
            #expect(jobs.map(\.id) == [id])
            #expect(jobs.first?.trustedCertificate == certificate.der)
            #expect(jobs.first?.credential == nil, "a server's trust is no password")
        }
    }

    /// A server the app trusted that then asks for a password: the transfer goes on with both
    /// (a self-signed server behind Basic authentication).
    @Test func aTrustedServersPasswordChallengeKeepsTheTrust() throws {
        let bench = try Bench()
        bench.run(Self.app, 0)
        let id = try bench.create(Self.app)
        let certificate = ServerCertificate(der: Data([0x30, 0x00]), subject: "self")
        _ = bench.desk.update(id, .ended(.untrusted(certificate)), bench.facts)
        let app = try #require(bench.apps[Self.app])
        _ = bench.desk.receive(
            .transferChallengeAnswered(session: "s", task: 1, answer: WireChallengeAnswer(disposition: .useCredential, trustsServer: true)),
            from: app, networkEntitled: true, bench.facts)
        #expect(bench.describe(bench.desk.update(id, .ended(.challenged(method: .basic, realm: "r")), bench.facts))
            == ["send \(id) challenge to \(Self.app) \(try bench.runID(Self.app))"])
        let answer = WireChallengeAnswer(disposition: .useCredential, user: "ann", password: "pw", persistence: .forSession)
        let (violation, effects) = bench.desk.receive(
            .transferChallengeAnswered(session: "s", task: 1, answer: answer), from: app, networkEntitled: true, bench.facts)
        #expect(violation == nil)
        let jobs = effects.compactMap { if case .start(let job) = $0 { job } else { nil } }
        #expect(jobs.map(\.id) == [id])
        #expect(jobs.first?.trustedCertificate == certificate.der)
        #expect(jobs.first?.credential == TransferCredential(user: "ann", password: "pw", method: .basic))
    }

    /// Wakes are keyed by app and session: a session's wake does not hold another app's session
    /// of the same name, and the wake's callback carries its own session's transfers only.
    @Test func wakesAreKeyedByAppAndSession() throws {
        let bench = try Bench()
        bench.run(Self.app, 0)
        bench.run(Self.other, 0)
        let first = try bench.create(Self.app, session: "s", task: 1)
        let second = try bench.create(Self.app, session: "t", task: 1)
        let others = try bench.create(Self.other, session: "s", task: 1)
        // Suspended: woken for their transfers (a wake on its way is not reset by a run's end).
        bench.run(Self.app, 0, .suspended, keptRunning: false)
        bench.run(Self.other, 0, .suspended, keptRunning: false)
        #expect(bench.describe(bench.fail(first)) == ["wake \(Self.app) s"])
        #expect(bench.describe(bench.fail(others)) == ["wake \(Self.other) s"], "another app's session of the same name wakes its app")
        #expect(bench.describe(bench.fail(second)) == ["wake \(Self.app) t"], "the session s's wake on its way does not hold t's")
        #expect(bench.describe(bench.desk.deliver(to: try #require(bench.apps[Self.app]), bench.facts)) == [], "each wake once at a time")
        bench.run(Self.app, 0, .background, keptRunning: false)
        let events = bench.desk.events(forWakeOf: "s", try #require(bench.apps[Self.app]))
        #expect(events.map(\.id) == [first])
    }

    /// A transfer waits for its earliest begin date on the scheduler's clock (which `advance`
    /// moves), for the network, and starts when they come.
    @Test func aTransferWaitsForItsBeginDateAndTheNetwork() throws {
        let bench = try Bench()
        bench.run(Self.app, 0)
        let id = try bench.create(Self.app, earliestBegin: bench.now + 60)
        #expect(bench.desk.listing(bench.facts).first?.waitingFor?.hasPrefix("its earliest begin date") == true)
        bench.now += 59
        #expect(bench.describe(bench.desk.reconsider(bench.facts).effects) == [], "its timer is armed already")
        bench.now += 1
        bench.network = .offline
        #expect(bench.describe(bench.desk.reconsider(bench.facts).effects) == [])
        #expect(bench.desk.listing(bench.facts).first?.waitingFor == "the network")
        bench.network = .online
        let (started, effects) = bench.desk.reconsider(bench.facts)
        #expect(bench.describe(effects) == ["start \(id)"])
        #expect(started == ["\(Self.app) download task 1 of session s (http://example.com/s/1)"])
    }
}
