import ConfidantAuth

extension SignInMethod {
    /// The method as a person names it: what the settings offer and what a saved chain lists.
    public var displayName: String {
        switch self {
        case .password: "password"
        case .arithmetic: "arithmetic challenge"
        case .emailCode: "e-mail code"
        case .totp: "authenticator app"
        case .biometric: "biometrics"
        }
    }
}
