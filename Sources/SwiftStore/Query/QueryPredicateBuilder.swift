import Foundation

/// Turns a `QueryNode` tree into predicate text with `%@` placeholders and the argument list,
/// in the exact form RealmSwift 10.54 produces, for example:
///
///     $0.age > 5                      "(age > %@)"                        [5]
///     $0.name.contains("a", [.caseInsensitive])  "(name CONTAINS[c] %@)"  ["a"]
///     $0.dogs.age >= 2                "(ANY dogs.age >= %@)"              [2]
///     $0.isGood && $0.age < 3         "(isGood == true && (age < %@))"    [3]
///     ($0.dogs.age > 5).count > 1     "(SUBQUERY(dogs, $col1, ($col1.age > %@)).@count > %@)"
///
/// Every comparison is parenthesised and so is every `&&`/`||`; `!` becomes `NOT ` inside the
/// comparison's parentheses or in front of a compound's. A Bool key path where a predicate is
/// expected becomes `path == true` (`== false` under `!`).
///
/// Where RealmSwift's text would drop a `NOT` (`!` around a `BETWEEN`, a double `!`) or is not a
/// predicate at all (a bare Bool map subscript, a bare Bool inside a subquery), the text here
/// keeps the meaning instead: `(NOT age BETWEEN {%@, %@})`, `map[%@] == true`.
struct QueryPredicateBuilder {
    private var text = ""
    private var arguments: [Any] = []
    /// Numbers the `SUBQUERY` variables `$col1`, `$col2`, ... in the order they are written.
    private var subqueryCounter = 0

    /// The predicate text and arguments for `root`.
    static func build(_ root: QueryNode) -> (String, [Any]) {
        var builder = QueryPredicateBuilder()
        builder.build(root, prefix: nil, asPredicate: true)
        return (builder.text, builder.arguments)
    }

    /// The text of `node`, for messages.
    static func describe(_ node: QueryNode) -> String {
        build(node).0
    }

    /// Appends `node`. `prefix` is a pending `NOT ` to place inside the node's parentheses;
    /// `asPredicate` says a predicate is expected here (so a Bool term gets `== true`).
    private mutating func build(_ node: QueryNode, prefix: String?, asPredicate: Bool) {
        switch node {
        case .constant(let value):
            text += "%@"
            arguments.append(QueryArgument.normalize(value))

        case .keyPath(let keyPath):
            if asPredicate {
                text += (prefix ?? "") + keyPath.joined + " == true"
                return
            }
            if keyPath.options.contains(.requiresAny) {
                text += "ANY "
            }
            text += keyPath.joined

        case .not(let child):
            guard asPredicate else {
                preconditionFailure("A negated query ('!') can only be used as a whole predicate, not as a value in a comparison")
            }
            if child.isBooleanTerm {
                text += prefix ?? ""
                buildTerm(child)
                text += " == false"
            } else {
                build(child, prefix: (prefix ?? "") + "NOT ", asPredicate: true)
            }

        case .comparison(let op, let lhs, let rhs, let options):
            switch op {
            case .and, .or:
                text += (prefix ?? "") + "("
                build(lhs, prefix: nil, asPredicate: true)
                text += " \(op.rawValue) "
                build(rhs, prefix: nil, asPredicate: true)
                text += ")"
            default:
                if case .keyPath(let l) = lhs, case .keyPath(let r) = rhs, l.isMultiValued, r.isMultiValued {
                    preconditionFailure("Comparing two collection columns is not permitted.")
                }
                text += "(" + (prefix ?? "")
                build(lhs, prefix: nil, asPredicate: false)
                text += " \(op.rawValue)\(options.modifier) "
                build(rhs, prefix: nil, asPredicate: false)
                text += ")"
            }

        case .between(let lhs, let lower, let upper):
            text += "(" + (prefix ?? "")
            build(lhs, prefix: nil, asPredicate: false)
            text += " BETWEEN {"
            build(lower, prefix: nil, asPredicate: false)
            text += ", "
            build(upper, prefix: nil, asPredicate: false)
            text += "})"

        case .subqueryCount(let inner):
            subqueryCounter += 1
            let variable = "$col\(subqueryCounter)"
            let (collection, rewritten) = SubqueryRewriter.rewrite(inner, variable: variable)
            text += "SUBQUERY(\(collection), \(variable), "
            build(rewritten, prefix: nil, asPredicate: true)
            text += ").@count"

        case .mapSubscript, .mixedSubscripts:
            text += prefix ?? ""
            buildTerm(node)
            if asPredicate {
                text += " == true"
            }
        }
    }

    /// Appends a Bool term without `== true`: a key path (without `ANY`) or a subscript.
    private mutating func buildTerm(_ node: QueryNode) {
        switch node {
        case .keyPath(let keyPath):
            text += keyPath.joined
        case .mapSubscript(let keyPath, let key):
            build(keyPath, prefix: nil, asPredicate: false)
            text += "[%@]"
            arguments.append(QueryArgument.normalize(key))
        case .mixedSubscripts(let keyPath, let keys):
            build(keyPath, prefix: nil, asPredicate: false)
            for key in keys {
                switch key {
                case .index(let index):
                    text += "[%@]"
                    arguments.append(index)
                case .key(let key):
                    text += "[%@]"
                    arguments.append(key)
                case .all:
                    text += "[%K]"
                    arguments.append("#any")
                }
            }
        default:
            build(node, prefix: nil, asPredicate: false)
        }
    }
}

/// Rewrites the predicate inside `(...).count` for a `SUBQUERY`: every key path through a
/// collection has the collection part replaced by the subquery variable, and the collection
/// becomes the subquery's source (`$0.dogs.age > 5` → `SUBQUERY(dogs, $col1, ($col1.age > %@))`).
private struct SubqueryRewriter {
    let variable: String
    var collection: String?

    static func rewrite(_ node: QueryNode, variable: String) -> (String, QueryNode) {
        var rewriter = SubqueryRewriter(variable: variable, collection: nil)
        let rewritten = rewriter.rewrite(node)
        guard let collection = rewriter.collection else {
            preconditionFailure("Subqueries must contain a keypath starting with a collection.")
        }
        return (collection, rewritten)
    }

    private mutating func rewrite(_ node: QueryNode) -> QueryNode {
        switch node {
        case .keyPath(var keyPath):
            guard keyPath.options.contains(.isCollection), !keyPath.components.isEmpty else { return node }
            // The collection is the first step unless a link path leads to it.
            let end = min(keyPath.collectionIndex ?? 0, keyPath.components.count - 1)
            collection = keyPath.components[0...end].joined(separator: ".")
            keyPath.components.replaceSubrange(0...end, with: [variable])
            keyPath.collectionIndex = nil
            // Inside the subquery the path is one element's (RealmSwift keeps it marked as a
            // collection, which makes comparing two of the element's properties trap).
            keyPath.options = []
            return .keyPath(keyPath)
        case .not(let child):
            return .not(rewrite(child))
        case .comparison(let op, let lhs, let rhs, let options):
            return .comparison(op, rewrite(lhs), rewrite(rhs), options)
        case .between(let lhs, let lower, let upper):
            return .between(rewrite(lhs), lower: rewrite(lower), upper: rewrite(upper))
        case .subqueryCount, .constant:
            // A nested subquery is rewritten when it is built, with its own variable.
            return node
        case .mapSubscript:
            preconditionFailure("Subqueries do not support map subscripts.")
        case .mixedSubscripts:
            preconditionFailure("Subqueries do not support AnyRealmValue subscripts.")
        }
    }
}
