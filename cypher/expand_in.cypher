// Subjects of each [entity, relation] pair (in-edges).
UNWIND $pairs AS pair
MATCH (e:Entity {id: pair[0]})<-[:$(pair[1])]-(x:Entity)
RETURN pair[0] AS e, pair[1] AS p, x.id AS x, x.name AS name, false AS literal,
       null AS value, null AS datatype
