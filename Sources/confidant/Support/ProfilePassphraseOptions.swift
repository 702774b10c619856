import ArgumentParser

/// The profile's passphrase for a vault command that reaches the profile's server (`backup --to
/// server`, `restore --from server`): the vault has a passphrase of its own, so the profile's may
/// differ. `--profile-passphrase-file`, then `CONFIDANT_PROFILE_PASSPHRASE`, then wherever the
/// vault's comes from (the same passphrase for both, or a prompt for each).
struct ProfilePassphraseOptions: ParsableArguments {
    @Option(
        name: .long,
        help:
            "With 'server': read the profile's passphrase from the first line of this file (default: CONFIDANT_PROFILE_PASSPHRASE, else as the vault's passphrase)."
    )
    var profilePassphraseFile: String?

    static let environmentVariable = "CONFIDANT_PROFILE_PASSPHRASE"

    /// The profile's passphrase, falling back to `vault`'s source; `isOwn` says whether it came
    /// from a source of its own rather than the vault's.
    func passphrase(else vault: PassphraseOptions) throws -> (text: String, isOwn: Bool) {
        if let given = try PassphraseOptions.given(file: profilePassphraseFile, variable: Self.environmentVariable) {
            return (given, true)
        }
        return (try vault.passphrase(prompt: "Profile passphrase: "), false)
    }
}
