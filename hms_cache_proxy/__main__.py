from hms_cache_proxy.cli import main

raise SystemExit(main())
