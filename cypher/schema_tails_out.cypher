// A bounded sample of the nodes one relationship type leads to: the
// relations around them are what can follow it. At most $tails of them,
// found among the type's first $read edges (a type whose edges mostly
// reach one hub gives fewer tails, never a longer read). The type is named
// in the text, so that Neo4j reads its edges from the type's index: given
// as a parameter, it scanned every entity and its edges until $read
// matched (2.3M database hits, a second, for a rare type at 10M triples).
MATCH (:Entity)-[:{{type}}]->(n:Entity)
WITH n LIMIT $read
WITH DISTINCT n LIMIT $tails
RETURN n.id AS n
