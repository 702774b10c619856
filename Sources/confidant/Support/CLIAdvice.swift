import ArgumentParser
import ConfidantKit
import ConfidantVault

/// What the user can do about an error, in terms of this CLI's commands. The libraries say what
/// went wrong; only the CLI knows which command fixes it.
enum CLIAdvice {
    /// The error with the command to run next, when there is one; the command names `profile`
    /// when it is not the default one, so that it can be run as printed.
    static func explain(_ error: any Error, profile: ProfileOptions? = nil) -> any Error {
        if let error = error as? ConfidantKitError, let advice = advice(for: error, profile: profile) {
            return CLIError.invalidArgument("\(error.description); \(advice)")
        }
        if let error = error as? VaultError {
            switch error {
            case .notInitialized:
                return CLIError.invalidArgument(
                    "\(error.description); run \(command("vault init", profile: profile)) first")
            case .ambiguousBackup:
                return CLIError.invalidArgument("\(error.description); pass it as --backup-id")
            default: break
            }
        }
        return error
    }

    static func advice(for error: ConfidantKitError, profile: ProfileOptions? = nil) -> String? {
        func run(_ path: String) -> String { command(path, profile: profile) }
        return switch error {
        case .notSignedIn: "run \(run("account register")) or \(run("account login"))"
        case .profileBelongsToOther: "use another --profile for a second account"
        case .sessionExpired: "run \(run("account login"))"
        case .stepUpRequired: "run \(run("account login")) to answer them"
        case .cannotRemoveThisDevice: "run \(run("account logout"))"
        case .insecureServerURL: "pass --insecure-http only if that network is yours alone"
        case .unknownUser: "\(command("chat users", profile: profile, "--search NAME")) lists who is there"
        case .keyChangedSinceVerification:
            "compare safety numbers with \(run("chat verify")), or confirm the send (--yes)"
        case .serverUnreachable: "check the server address and that the server runs"
        default: nil
        }
    }

    /// "`confidant PATH ARGUMENTS`", with the profile's `--profile` when it has one to name.
    private static func command(_ path: String, profile: ProfileOptions?, _ arguments: String...) -> String {
        ProfileOptions.suggestion(path, profile: profile?.profile, arguments)
    }
}
