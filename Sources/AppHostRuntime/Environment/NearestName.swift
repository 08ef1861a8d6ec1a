/// "Did you mean …?": the known name nearest a mistyped one, for policy keys, subcommands and
/// the command language alike.
public enum NearestName {
    /// The name in `candidates` closest to `word` by edit distance (letter case ignored), if it
    /// is close enough to be a typo: at most a third of the word's letters apart, and at least one.
    public static func suggestion(for word: String, among candidates: [String]) -> String? {
        let typed = Array(word.lowercased())
        let limit = max(1, typed.count / 3)
        var best: (name: String, distance: Int)?
        for candidate in candidates {
            let distance = editDistance(typed, Array(candidate.lowercased()))
            if distance <= limit, distance < (best?.distance ?? .max) { best = (candidate, distance) }
        }
        return best?.name
    }

    /// Levenshtein distance: insertions, deletions and substitutions, each costing one.
    static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count)
        var current = previous
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
                current[j] = min(previous[j] + 1, current[j - 1] + 1, substitution)
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
