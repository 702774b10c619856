import ConfidantCrypto
import Crypto
import Foundation

/// A signed membership change of a group (docs/PROTOCOL.md §10.2): what an admin (or, for
/// `leave`, any member) did, naming the change it builds on.
///
/// Read one with ``init(serialized:)``, then check its signature with ``verified(by:)`` before a
/// ``GroupLedger`` takes it.
public struct GroupChange: Sendable, Hashable {
    /// The most members a group has, and so the most ids one change names.
    public static let maximumMembers = 1_000
    /// The most UTF-8 bytes of a group's name.
    public static let maximumNameBytes = 128
    /// The longest disappearing timer (4 weeks), as in one-to-one chats.
    public static let maximumTimerSeconds = 2_419_200

    /// What the change does.
    public enum Action: Sendable, Hashable {
        /// Makes the group: its name and the members besides the author, who is its first admin.
        case create(name: String, members: [UUID])
        /// Adds users as members.
        case add([UUID])
        /// Removes members.
        case remove([UUID])
        /// The author leaves.
        case leave
        /// Makes a member an admin.
        case promote(UUID)
        /// Makes an admin a member only.
        case demote(UUID)
        /// Names the group.
        case rename(String)
        /// Sets the group's picture (the SHA-256 of its image, as avatars) or removes it.
        case picture(Data?)
        /// Sets the group's disappearing timer in seconds; 0 is off.
        case timer(seconds: Int)

        /// The users this action removes or demotes (the author for `leave`).
        func ousted(author: UUID) -> [UUID] {
            switch self {
            case .remove(let users): users
            case .demote(let user): [user]
            case .leave: [author]
            default: []
            }
        }
    }

    /// The group changed.
    public let groupID: UUID
    /// A random id, so that two equal changes are still two.
    public let changeID: UUID
    /// 1 for the creation, else the parent's number + 1.
    public let number: UInt32
    /// The change this one builds on: the author's group head when it was made; nil for the creation.
    public let parent: GroupChangeDigest?
    /// The user and device that made (and signed) the change.
    public let author: DeviceAddress
    /// When it was made, by the author's clock (milliseconds since 1970).
    public let timeMilliseconds: UInt64
    /// What the change does.
    public let action: Action
    /// The author device's Ed25519 signature.
    let signature: Data
    /// The exact bytes, as sent.
    public let serialized: Data
    /// SHA-256 of ``serialized``: the change's name in the group.
    public let digest: GroupChangeDigest

    /// Where the change stands in the order changes apply.
    public var position: GroupChangePosition { GroupChangePosition(number: number, digest: digest) }

    /// The users the change ousts: removed, demoted, or the author leaving.
    var ousted: [UUID] { action.ousted(author: author.userID) }

    init(
        groupID: UUID, changeID: UUID, number: UInt32, parent: GroupChangeDigest?, author: DeviceAddress,
        timeMilliseconds: UInt64, action: Action, signature: Data, serialized: Data
    ) {
        self.groupID = groupID
        self.changeID = changeID
        self.number = number
        self.parent = parent
        self.author = author
        self.timeMilliseconds = timeMilliseconds
        self.action = action
        self.signature = signature
        self.serialized = serialized
        digest = GroupChangeDigest(Array(SHA256.hash(data: serialized)))
    }

    /// Makes and signs a change by `identity`'s device of user `author`.
    public static func make(
        groupID: UUID, number: UInt32, parent: GroupChangeDigest?, action: Action, author: UUID,
        identity: PrivateIdentity, time: Date = Date(), changeID: UUID = UUID()
    ) throws(GroupChangeError) -> GroupChange {
        let address = DeviceAddress(userID: author, deviceID: identity.deviceID)
        let milliseconds = UInt64(max(0, (time.timeIntervalSince1970 * 1_000).rounded(.down)))
        let unsigned = try signedBytes(
            groupID: groupID, changeID: changeID, number: number, parent: parent, author: address,
            timeMilliseconds: milliseconds, action: action)
        let signature: Data
        do {
            signature = try identity.signingKey.signature(for: signatureContext + unsigned)
        } catch {
            throw .malformed("signing failed")
        }
        let bytes = Data(unsigned) + signature
        return try GroupChange(serialized: bytes)
    }

    /// The change with its signature checked against the author device's identity.
    public func verified(by identity: PublicIdentity) throws(GroupChangeError) -> VerifiedGroupChange {
        guard identity.deviceID == author.deviceID else { throw .badSignature }
        let signed = serialized.dropLast(Self.signatureCount)
        guard identity.signingKey.isValidSignature(signature, for: Self.signatureContext + Array(signed)) else {
            throw .badSignature
        }
        return VerifiedGroupChange(change: self)
    }
}

/// A change whose signature was checked with its author device's identity: what a
/// ``GroupLedger`` takes.
public struct VerifiedGroupChange: Sendable, Hashable {
    /// The change, its signature checked.
    public let change: GroupChange
}

/// Where a change stands in the order changes apply: by number, then by digest.
public struct GroupChangePosition: Sendable, Hashable, Comparable {
    /// The change's number: its depth from the creation.
    public let number: UInt32
    /// The change's digest, which breaks ties between changes of one number.
    public let digest: GroupChangeDigest

    /// Earlier in the order changes apply.
    public static func < (lhs: GroupChangePosition, rhs: GroupChangePosition) -> Bool {
        lhs.number != rhs.number ? lhs.number < rhs.number : lhs.digest < rhs.digest
    }
}

/// The SHA-256 of a serialized change; ordered byte by byte, which breaks ties between changes
/// of one number.
public struct GroupChangeDigest: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The 32 bytes of the SHA-256.
    public let bytes: [UInt8]

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Byte by byte, as unsigned numbers.
    public static func < (lhs: GroupChangeDigest, rhs: GroupChangeDigest) -> Bool {
        lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
    }

    /// The digest in lower-case hex.
    public var description: String { bytes.hexString }
}
