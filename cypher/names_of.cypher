// An entity's names as a correction sees them: its shown name and rank, the
// loaded name a correction's name displaced (kept to show again when that one
// goes), and the names it has as edges (those corrections put in), by the name
// predicates named in the text, as [type, text, language] rows.
MATCH (s:Entity {id: $s})
OPTIONAL MATCH (s)-[r:{{types}}]->(v:Value)
RETURN s.name AS shown, s.name_rank AS rank, s.tog_name_before AS before, s.tog_rank_before AS before_rank,
       [x IN collect([type(r), v.value, v.lang]) WHERE x[0] IS NOT NULL] AS names
