// The first $keep objects of a crowded pair in the engine's sample order
// (x.sk: the SHA-1 of the IRI, of the lexical form for a literal; see
// sample_key in engine/backends/common.py), sorted by the server: only
// the sample travels, and it is kept (sample_save), or it is kept without
// travelling: the statement ends in sample_return or in sample_kept_here.
// The type is named in the text, so that only its edges are read (see
// expand_out).
MATCH (e:Entity {id: $e})-[:{{type}}]->(x) WHERE x:Entity OR x:Value
WITH x ORDER BY x.sk, x.id LIMIT $keep
{{then}}
