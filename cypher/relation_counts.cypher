// The facts of each of a batch of relationship types (counts:
// relation_count_each per type, joined by commas), each from Neo4j's count
// store because the type is named in the text (see engine.queries.cypher_name):
// one round trip per batch, not per type.
RETURN [{{counts}}] AS counts
