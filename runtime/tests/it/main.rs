mod cluster;
