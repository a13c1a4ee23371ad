"""Derby (Dirk Henn, 2000): the horse-race betting board game. See ``engine`` for the rules."""
