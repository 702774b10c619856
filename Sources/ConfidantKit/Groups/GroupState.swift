import Foundation

/// What a group is, as its members' devices compute it from its changes (docs/PROTOCOL.md §10.3):
/// the relay never sees any of it.
public struct GroupState: Sendable, Hashable {
    /// The group's random id.
    public let groupID: UUID
    /// The group's name.
    public private(set) var name: String
    /// The SHA-256 of the group's picture, if it has one.
    public private(set) var picture: Data?
    /// The disappearing timer in seconds; 0 is off.
    public private(set) var timerSeconds: Int
    /// Members in the order they joined.
    public private(set) var members: [UUID]
    /// Admins, in the order they (last) became admins.
    public private(set) var admins: [UUID]
    /// How many changes the state is made of.
    public private(set) var version: Int
    /// The last change applied: the parent of the next change a member makes.
    public private(set) var head: GroupChangeDigest
    /// The head's number.
    public private(set) var headNumber: UInt32

    /// The state a creation makes.
    init(creation change: GroupChange) {
        groupID = change.groupID
        var name = ""
        var members = [change.author.userID]
        if case .create(let created, let listed) = change.action {
            name = created
            members += listed
        }
        self.name = name
        picture = nil
        timerSeconds = 0
        self.members = members
        admins = [change.author.userID]
        version = 1
        head = change.digest
        headNumber = change.number
    }

    /// Whether `user` is a member.
    public func isMember(_ user: UUID) -> Bool { members.contains(user) }
    /// Whether `user` is an admin.
    public func isAdmin(_ user: UUID) -> Bool { admins.contains(user) }

    /// Why `change` may not be made on this state (its author's view), or nil if it may. `ranks`
    /// holds when each admin first became one: an admin ousts no admin of an earlier rank.
    func refusal(of change: GroupChange, ranks: [UUID: GroupChangePosition]) -> GroupChangeRefusal? {
        let author = change.author.userID
        guard isMember(author) else { return .authorNotMember }
        switch change.action {
        case .create: return .secondCreation
        case .leave: return nil
        default: break
        }
        guard isAdmin(author) else { return .authorNotAdmin }
        switch change.action {
        case .add(let users):
            if let present = users.first(where: isMember) { return .alreadyMember(present) }
            if members.count + users.count > GroupChange.maximumMembers { return .groupFull }
        case .remove(let users):
            if users.contains(author) { return .removesAuthor }
            if let absent = users.first(where: { !isMember($0) }) { return .notMember(absent) }
            if let senior = users.first(where: { outranks($0, author, ranks) }) { return .outranked(senior) }
        case .promote(let user):
            if !isMember(user) { return .notMember(user) }
            if isAdmin(user) { return .alreadyAdmin(user) }
        case .demote(let user):
            if !isAdmin(user) { return .notAdmin(user) }
            if outranks(user, author, ranks) { return .outranked(user) }
        case .create, .leave, .rename, .picture, .timer: break
        }
        return nil
    }

    /// Whether `user` is an admin who became one before `other` did.
    private func outranks(_ user: UUID, _ other: UUID, _ ranks: [UUID: GroupChangePosition]) -> Bool {
        guard isAdmin(user), let rank = ranks[user] else { return false }
        guard let otherRank = ranks[other] else { return true }
        return rank < otherRank
    }

    /// Applies a change: effects already in place are skipped (a concurrent change may have made
    /// them), adds stop at the member limit, and a group left with members but no admin makes its
    /// longest-standing member one. Returns the users who became admins.
    @discardableResult
    mutating func apply(_ change: GroupChange) -> [UUID] {
        let before = Set(admins)
        switch change.action {
        case .create: break
        case .add(let users):
            for user in users where !isMember(user) && members.count < GroupChange.maximumMembers {
                members.append(user)
            }
        case .remove(let users):
            let gone = Set(users)
            members.removeAll(where: gone.contains)
            admins.removeAll(where: gone.contains)
        case .leave:
            members.removeAll { $0 == change.author.userID }
            admins.removeAll { $0 == change.author.userID }
        case .promote(let user):
            if isMember(user) && !isAdmin(user) { admins.append(user) }
        case .demote(let user): admins.removeAll { $0 == user }
        case .rename(let name): self.name = name
        case .picture(let digest): picture = digest
        case .timer(let seconds): timerSeconds = seconds
        }
        if admins.isEmpty, let first = members.first { admins = [first] }
        version += 1
        head = change.digest
        headNumber = change.number
        return admins.filter { !before.contains($0) }
    }
}
