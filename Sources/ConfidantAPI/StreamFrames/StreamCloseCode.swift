/// The relay's own close codes for the stream (`GET /v1/stream`, docs/PROTOCOL.md §7), shared by
/// the server that closes with them and the clients that react to them; 4000–4999 are the
/// application's (RFC 6455 §7.4.2).
public enum StreamCloseCode: UInt16, Sendable, CaseIterable {
    /// The session ended (signed out, the device removed, the account deleted): reconnecting with
    /// its token is refused.
    case revoked = 4401
    /// The device's proof was refused: its first frame was something else, or a signature by
    /// another key than the device's (a token used without the device, or a device whose key was
    /// replaced). Reconnecting with that key will not help.
    case proofRefused = 4403
    /// No proof came within the relay's limit (`streamProofSeconds`): a slow device connects again.
    case proofLate = 4408
    /// The device opened more streams than the relay keeps for one device: this, the oldest, made
    /// way for the newest. Another process of the same profile is live; nothing to do.
    case superseded = 4409
}
