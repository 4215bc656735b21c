// [subject, relation, value id] rows known to be new.
UNWIND $rows AS row
MATCH (s:Entity {id: row[0]})
MATCH (o:Value {id: row[2]})
CREATE (s)-[:$(row[1])]->(o)
