// Draws one run in Neo4j Browser: set the parameter first with
//   :param run => "RUN-ID"
// then run this query.  Style it with cypher/tog-browser.grass (:style).
// Only the run's own nodes and edges are returned (not the KG entities the
// path nodes are at), so Browser connects nothing of the KG into the tree.
MATCH (r:TogRun {id: $run})-[root:ROOT]->(top:TogPath)
MATCH tree = (top)<-[:PARENT*0..]-(p:TogPath)
RETURN r, root, tree
