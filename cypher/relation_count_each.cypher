COUNT { ()-[:{{type}}]->() }
