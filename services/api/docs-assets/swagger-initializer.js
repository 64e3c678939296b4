// Starts Swagger UI on /docs with the service's own document (services/api/docs-routes.ts serves
// this file and swagger-ui-dist's assets from this process: no CDN, works offline). An external
// file rather than an inline script, so the page's Content-Security-Policy can say script-src 'self'.
window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: '/openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
    // Never send the document to the public validator (offline, and it is nobody else's business).
    validatorUrl: null,
    // "Authorize" with an API key once; it stays for the tab's next visits.
    persistAuthorization: true,
    displayRequestDuration: true,
    filter: true,
    tryItOutEnabled: false,
  })
})
