// The objects of each [entity, relation] pair with their names: what is
// behind an unnamed node (a Freebase CVT) that a search looks through.
UNWIND $pairs AS pair
MATCH (e:Entity {id: pair[0]})-[:$(pair[1])]->(x)
WHERE x:Entity OR x:Value
RETURN pair[0] AS e, pair[1] AS p, x.id AS x, x.name AS name, x:Value AS literal,
       x.value AS value, x.datatype AS datatype
