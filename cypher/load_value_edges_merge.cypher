// [subject, relation, value id] rows that may exist already.
UNWIND $rows AS row
MATCH (s:Entity {id: row[0]})
MATCH (o:Value {id: row[2]})
MERGE (s)-[:$(row[1])]->(o)
