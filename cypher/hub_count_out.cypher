COUNT { (e)-[:{{type}}]->() }
