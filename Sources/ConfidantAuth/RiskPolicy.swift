/// Sign-in methods a user can chain.
public enum SignInMethod: String, Sendable, CaseIterable, Codable {
    case password, arithmetic
    case emailCode = "email-code"
    case totp, biometric
}

/// What the server knows when a sign-in starts.
public struct SignInContext: Sendable {
    public var configuredChain: [SignInMethod]
    public var knownDevice: Bool
    public var knownAddress: Bool
    /// Consecutive failures for this account and for this network address, within the window.
    public var accountFailures: Int
    public var addressFailures: Int
    /// Seconds since the last failure, if any.
    public var secondsSinceLastFailure: Double?

    public init(
        configuredChain: [SignInMethod], knownDevice: Bool, knownAddress: Bool,
        accountFailures: Int = 0, addressFailures: Int = 0, secondsSinceLastFailure: Double? = nil
    ) {
        self.configuredChain = configuredChain
        self.knownDevice = knownDevice
        self.knownAddress = knownAddress
        self.accountFailures = accountFailures
        self.addressFailures = addressFailures
        self.secondsSinceLastFailure = secondsSinceLastFailure
    }
}

/// The adaptive policy (pure): which steps, how long to wait, and whether sign-in is locked.
public struct RiskPolicy: Sendable {
    /// Failures (per account, and separately per address) that lock sign-in.
    public var lockoutThreshold = 10
    /// How long a lock-out lasts, in seconds.
    public var lockoutSeconds: Double = 15 * 60
    /// The factor a new device or address adds when the chain lacks it.
    public var stepUpMethod: SignInMethod = .emailCode
    /// Delay after n failures: base · 2^(n−1), at most `maximumDelay` seconds.
    public var baseDelay: Double = 1
    public var maximumDelay: Double = 30

    public init() {}

    public enum Decision: Sendable, Equatable {
        /// Go ahead with these steps, in order, after waiting `delay` seconds.
        case proceed(steps: [SignInMethod], delay: Double)
        /// Locked: try again after `retryAfter` seconds.
        case locked(retryAfter: Double)
    }

    public func decide(_ context: SignInContext) -> Decision {
        let failures = max(context.accountFailures, context.addressFailures)
        if failures >= lockoutThreshold {
            let elapsed = context.secondsSinceLastFailure ?? 0
            if elapsed < lockoutSeconds { return .locked(retryAfter: lockoutSeconds - elapsed) }
        }
        var steps = context.configuredChain.filter { $0 != .biometric }  // biometrics stay on the device
        if steps.isEmpty { steps = [.password] }
        if !context.knownDevice || !context.knownAddress, !steps.contains(stepUpMethod) {
            steps.append(stepUpMethod)
        }
        let delay =
            failures == 0 || failures >= lockoutThreshold
            ? 0 : min(maximumDelay, baseDelay * Double(1 << min(failures - 1, 30)))
        return .proceed(steps: steps, delay: delay)
    }
}
