/*
 * The OpenSM interface dfsssp-rs is built against: bindgen reads this header (build.rs) to generate the
 * Rust bindings for OpenSM's types and functions, and to emit C wrappers for the headers' static
 * inline helpers (cl_qmap_head, osm_node_get_physp_ptr, ...), which cc compiles into the plug-in.
 *
 * The plug-in exports one symbol, which OpenSM's event-plugin loader looks up by name:
 *   osm_event_plugin_t osm_event_plugin;   // version string = OSM_VERSION of these headers
 * Its create() registers the routing engines "sssp-rs" and "dfsssp-rs" with
 * osm_register_external_routing_engine().
 */
#ifndef DFSSSP_RS_H
#define DFSSSP_RS_H

#include <stdint.h>
/*
 * osm_config.h must come first: osm_subnet.h tests ENABLE_OSM_PERF_MGR to lay out osm_subn_opt_t
 * but does not include osm_config.h itself. Without it the options struct is 56 bytes short of
 * what the opensm binary uses, and every field of osm_opensm_t after `subn` (sm, sa, log, ...)
 * is read at the wrong offset.
 */
#include <opensm/osm_config.h>
#include <complib/cl_types.h>
#include <complib/cl_qmap.h>
#include <complib/cl_ptr_vector.h>
#include <iba/ib_types.h>
#include <opensm/osm_version.h>
#include <opensm/osm_opensm.h>
#include <opensm/osm_event_plugin.h>
#include <opensm/osm_subnet.h>
#include <opensm/osm_switch.h>
#include <opensm/osm_node.h>
#include <opensm/osm_port.h>
#include <opensm/osm_log.h>
#include <opensm/osm_multicast.h>
#include <opensm/osm_mcm_port.h>
#include <opensm/osm_mcast_tbl.h>
#include <complib/cl_qlist.h>

extern osm_event_plugin_t osm_event_plugin;

#endif
