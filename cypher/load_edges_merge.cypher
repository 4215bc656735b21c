// [subject node id, object node id] rows of one relation that may exist
// already (a load into a database that holds edges). The type is named in the
// text (engine.queries.cypher_name), as in expand_out. Given as a parameter,
// a MERGE planned on a database without relationships was a scan of every
// relationship for each row, and the plan was kept: 89,700 database hits and
// 6.5 s for 300 rows, against 1,200 hits and 0.03 s for the type named
// (Expand(Into) between the two nodes).
UNWIND $rows AS row
MATCH (s) WHERE id(s) = row[0]
MATCH (o) WHERE id(o) = row[1]
MERGE (s)-[:{{type}}]->(o)
