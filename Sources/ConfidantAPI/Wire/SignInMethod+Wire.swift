import ConfidantAuth

/// The sign-in methods of ConfidantAuth as the API spells them (`emailCode` on the wire,
/// `email-code` in the domain), one mapping for the server and the client.
extension SignInMethod {
    public init(_ wire: Components.Schemas.SignInMethod) {
        switch wire {
        case .password: self = .password
        case .arithmetic: self = .arithmetic
        case .emailCode: self = .emailCode
        case .totp: self = .totp
        case .biometric: self = .biometric
        }
    }

    public var wire: Components.Schemas.SignInMethod {
        switch self {
        case .password: return .password
        case .arithmetic: return .arithmetic
        case .emailCode: return .emailCode
        case .totp: return .totp
        case .biometric: return .biometric
        }
    }
}
