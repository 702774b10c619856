import ConfidantCrypto
import Foundation

/// Why a group's members do not apply a change (docs/PROTOCOL.md §10.3); shown beside it.
public enum GroupChangeRefusal: Sendable, Hashable, CustomStringConvertible {
    /// Its author was not a member when they made it.
    case authorNotMember
    /// Only admins make this change.
    case authorNotAdmin
    /// The group was created already (by another change).
    case secondCreation
    /// The user added is a member already.
    case alreadyMember(UUID)
    /// The user named is not a member.
    case notMember(UUID)
    /// An admin may not remove or demote an admin who became one before them.
    case outranked(UUID)
    /// The user promoted is an admin already.
    case alreadyAdmin(UUID)
    /// The user demoted is not an admin.
    case notAdmin(UUID)
    /// An admin removes themselves by leaving.
    case removesAuthor
    /// The group would have more than 1,000 members.
    case groupFull
    /// Its number is not its parent's number + 1.
    case badNumber
    /// It is for another group than its parent.
    case wrongGroup
    /// Its author was removed or demoted, or left, in a change made at the same time that stands.
    case overruled(by: GroupChangeDigest)
    /// It builds on a change the members refused.
    case buildsOnRefused(GroupChangeDigest)
    /// The group has its most changes; make a new group.
    case tooManyChanges
    /// Too many changes wait for the changes they build on.
    case tooManyWaiting

    public var description: String {
        switch self {
        case .authorNotMember: "its author is not a member of the group"
        case .authorNotAdmin: "only the group's admins can make this change"
        case .secondCreation: "the group exists already"
        case .alreadyMember(let user): "\(user.canonicalString) is a member already"
        case .notMember(let user): "\(user.canonicalString) is not a member"
        case .outranked(let user): "\(user.canonicalString) became an admin before the change's author"
        case .alreadyAdmin(let user): "\(user.canonicalString) is an admin already"
        case .notAdmin(let user): "\(user.canonicalString) is not an admin"
        case .removesAuthor: "an admin leaves the group rather than removing themselves"
        case .groupFull: "a group has at most \(GroupChange.maximumMembers) members"
        case .badNumber: "its number does not follow the change it builds on"
        case .wrongGroup: "it builds on a change of another group"
        case .overruled: "its author was removed from the group or lost admin rights at the same time"
        case .buildsOnRefused: "it builds on a change the group refused"
        case .tooManyChanges: "the group has \(GroupLedger.maximumChanges) changes, its most; make a new group"
        case .tooManyWaiting: "too many changes wait for the changes they build on"
        }
    }
}
