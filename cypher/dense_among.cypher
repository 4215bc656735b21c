// Which of a batch of entities (a load touched them) have more than $min
// relationships one way (see dense_entities).
UNWIND $ids AS id
MATCH (n:Entity {id: id}) WHERE COUNT { (n)-->() } > $min OR COUNT { (n)<--() } > $min
RETURN n.id AS id
