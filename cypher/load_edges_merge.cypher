// [subject, relation, object entity] rows that may exist already.
UNWIND $rows AS row
MATCH (s:Entity {id: row[0]})
MATCH (o:Entity {id: row[2]})
MERGE (s)-[:$(row[1])]->(o)
