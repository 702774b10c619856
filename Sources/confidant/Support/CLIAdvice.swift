import ArgumentParser
import ConfidantKit

/// What the user can do about an error, in terms of this CLI's commands. The libraries say what
/// went wrong; only the CLI knows which command fixes it.
enum CLIAdvice {
    /// The error with the command to run next, when there is one.
    static func explain(_ error: any Error) -> any Error {
        guard let error = error as? ConfidantKitError, let advice = advice(for: error) else { return error }
        return CLIError.invalidArgument("\(error.description); \(advice)")
    }

    static func advice(for error: ConfidantKitError) -> String? {
        switch error {
        case .notSignedIn: "run `confidant register` or `confidant login`"
        case .profileBelongsToOther: "use another --profile for a second account"
        case .sessionExpired: "run `confidant login`"
        case .stepUpRequired: "run `confidant login` to answer them"
        case .unknownUser: "`confidant users --search` lists who is there"
        case .keyChangedSinceVerification: "compare safety numbers with `confidant verify`, or confirm the send"
        case .serverUnreachable: "check the server address and that the server runs"
        default: nil
        }
    }
}
