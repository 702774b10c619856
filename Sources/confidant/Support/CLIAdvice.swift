import ArgumentParser
import ConfidantKit
import ConfidantVault

/// What the user can do about an error, in terms of this CLI's commands. The libraries say what
/// went wrong; only the CLI knows which command fixes it.
enum CLIAdvice {
    /// The error with the command to run next, when there is one.
    static func explain(_ error: any Error) -> any Error {
        if let error = error as? ConfidantKitError, let advice = advice(for: error) {
            return CLIError.invalidArgument("\(error.description); \(advice)")
        }
        if let error = error as? VaultError {
            switch error {
            case .notInitialized:
                return CLIError.invalidArgument("\(error.description); run `confidant vault init` first")
            case .ambiguousBackup:
                return CLIError.invalidArgument("\(error.description); pass it as --backup-id")
            default: break
            }
        }
        return error
    }

    static func advice(for error: ConfidantKitError) -> String? {
        switch error {
        case .notSignedIn: "run `confidant account register` or `confidant account login`"
        case .profileBelongsToOther: "use another --profile for a second account"
        case .sessionExpired: "run `confidant account login`"
        case .stepUpRequired: "run `confidant account login` to answer them"
        case .cannotRemoveThisDevice: "run `confidant account logout`"
        case .insecureServerURL: "pass --insecure-http only if that network is yours alone"
        case .unknownUser: "`confidant chat users --search` lists who is there"
        case .keyChangedSinceVerification:
            "compare safety numbers with `confidant chat verify`, or confirm the send (--yes)"
        case .serverUnreachable: "check the server address and that the server runs"
        default: nil
        }
    }
}
