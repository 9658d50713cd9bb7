"""The generators of the project's generated docs: the tables made from the element
declarations (element_tables) and from the measured accuracy (accuracy_tables).  The
command prints or writes them (cli); they import nothing of it."""
