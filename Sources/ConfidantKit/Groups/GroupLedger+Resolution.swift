import Foundation

/// Resolving a group whose changes branch (docs/PROTOCOL.md §10.3):
/// 1. each change is judged on the state its author saw (its ancestors alone);
/// 2. ousters (removals, demotions, leaving) stand in order of their authors' rank, one's own
///    first: one stands unless it, or a change it builds on, is overruled by an ouster that stands;
/// 3. a change made at the same time as a standing ouster of its author is overruled;
/// 4. refusals pass to descendants, and the rest apply in order.
extension GroupLedger {
    mutating func resolve() {
        let ordered = placed.values.sorted(by: GroupChange.appliesBefore)
        guard let root = ordered.first, root.parent == nil else { return }
        var children: [GroupChangeDigest: Int] = [:]
        for change in ordered { if let parent = change.parent { children[parent, default: 0] += 1 } }

        // 1. Validity where each author made the change; a state is dropped once its children are judged.
        var ranks = [root.author.userID: root.position]
        var invalid: [GroupChangeDigest: GroupChangeRefusal] = [:]
        var states: [GroupChangeDigest: GroupState] = [root.digest: GroupState(creation: root)]
        for change in ordered.dropFirst() {
            guard let parent = change.parent else { continue }
            if invalid[parent] != nil {
                invalid[change.digest] = .buildsOnRefused(parent)
            } else if var state = states[parent] {
                if let refusal = state.refusal(of: change, ranks: ranks) {
                    invalid[change.digest] = refusal
                } else {
                    for user in state.apply(change) where ranks[user] == nil { ranks[user] = change.position }
                    states[change.digest] = state
                }
            }
            children[parent, default: 1] -= 1
            if children[parent] == 0 { states[parent] = nil }
        }

        // 2. The ousters that stand.
        let ousters = ordered.dropFirst().filter { invalid[$0.digest] == nil && !$0.ousted.isEmpty }
        var standing: [GroupChange] = []
        for ouster in ousters.sorted(by: { Self.standsBefore($0, $1, ranks) })
        where !ancestry(of: ouster).contains(where: { overruler(of: $0, among: standing) != nil }) {
            standing.append(ouster)
        }

        // 3, 4. What applies.
        var merged = GroupState(creation: root)
        var refusals: [GroupChangeDigest: GroupChangeRefusal] = [:]
        var validButRefused = 0
        for change in ordered.dropFirst() {
            let digest = change.digest
            if let reason = invalid[digest] {
                refusals[digest] = reason
                continue
            }
            if let parent = change.parent, refusals[parent] != nil {
                refusals[digest] = .buildsOnRefused(parent)
            } else if let ouster = overruler(of: change, among: standing) {
                refusals[digest] = .overruled(by: ouster.digest)
            } else {
                merged.apply(change)
                continue
            }
            validButRefused += 1
        }
        state = merged
        refused = refusals
        self.ranks = ranks
        self.validButRefused = validButRefused
    }

    /// Ousters by earlier-ranked authors first; an author's ouster of themselves before their others.
    private static func standsBefore(
        _ a: GroupChange, _ b: GroupChange, _ ranks: [UUID: GroupChangePosition]
    ) -> Bool {
        let rankA = ranks[a.author.userID] ?? a.position
        let rankB = ranks[b.author.userID] ?? b.position
        if rankA != rankB { return rankA < rankB }
        let selfA = a.ousted.contains(a.author.userID)
        let selfB = b.ousted.contains(b.author.userID)
        if selfA != selfB { return selfA }
        return a.position < b.position
    }

    /// The first of `ousters` that ousts the change's author at the same time as the change.
    private func overruler(of change: GroupChange, among ousters: [GroupChange]) -> GroupChange? {
        ousters.first { $0.ousted.contains(change.author.userID) && areConcurrent($0, change) }
    }

    /// The change and every change it builds on, up to the creation.
    private func ancestry(of change: GroupChange) -> [GroupChange] {
        var chain = [change]
        while let parent = chain[chain.count - 1].parent, let next = placed[parent] { chain.append(next) }
        return chain
    }

    /// Whether neither change is an ancestor of the other.
    func areConcurrent(_ a: GroupChange, _ b: GroupChange) -> Bool {
        a.digest != b.digest && !isAncestor(a, of: b) && !isAncestor(b, of: a)
    }

    private func isAncestor(_ ancestor: GroupChange, of change: GroupChange) -> Bool {
        var current = change
        while current.number > ancestor.number {
            guard let parent = current.parent, let next = placed[parent] else { return false }
            current = next
        }
        return current.digest == ancestor.digest
    }
}
