// [subject node id, relation, object node id] rows that may exist already.
UNWIND $rows AS row
MATCH (s) WHERE id(s) = row[0]
MATCH (o) WHERE id(o) = row[2]
MERGE (s)-[:$(row[1])]->(o)
