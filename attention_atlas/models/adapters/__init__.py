"""One module per bundled model family; importing a module registers its ids."""
