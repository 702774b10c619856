import ArgumentParser

/// A command whose work is messaging through ConfidantKit (a live chat, a run of sends): `main`
/// moves the process's Swift concurrency onto the event loops of its connections before it runs
/// (`EventLoopConcurrency`), which spares each message some of its hand-overs between threads.
/// Commands that do long blocking work beside messaging (the app's vault streams, password
/// hashing) keep Swift's own thread pool.
protocol EventLoopCommand: ParsableCommand {}

extension ChatOpenCommand: EventLoopCommand {}
extension SendCommand: EventLoopCommand {}
