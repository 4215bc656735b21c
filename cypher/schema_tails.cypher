// A bounded sample of the nodes each of a batch of relationship types leads
// to: the relations around them are what can follow it. branches: one
// schema_tails_out or schema_tails_in per type and direction, joined by
// UNION ALL, each with its place in the batch (the i of its rows). At most $tails
// of a type's nodes, found among its first $read edges (a type whose edges
// mostly reach one hub or literals gives fewer tails, never a longer read:
// the label is checked after the limit, or a type of 200,000 edges to
// literals was read whole looking for entities). Each type is
// named in the text, so that Neo4j reads its edges from the type's index:
// given as a parameter, it scanned every entity and its edges until $read
// matched (2.3M database hits, a second, for a rare type at 10M triples).
// One statement per UNION_TYPES relations (engine/backends/neo4j/kg.py):
// Neo4j plans each new text, and these are sent once per store.
{{branches}}
